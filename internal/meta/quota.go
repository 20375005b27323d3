package meta

import (
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
)

// Client quotas (issue 14; docs/quotas.md), as Kafka's
// DescribeClientQuotas and AlterClientQuotas see them: an entity of one or
// two components (user, client-id, user and client-id, or ip), each
// naming a specific value or the type's default, with quota values by key.

// The entity types.
const (
	QuotaUser     = "user"
	QuotaClientID = "client-id"
	QuotaIP       = "ip"
)

// The quota keys Kafka accepts, by entity kind. samsa enforces the byte
// rates (docs/quotas.md); the others are stored and described.
const (
	QuotaProducerByteRate       = "producer_byte_rate"
	QuotaConsumerByteRate       = "consumer_byte_rate"
	QuotaRequestPercentage      = "request_percentage"
	QuotaControllerMutationRate = "controller_mutation_rate"
	QuotaConnectionCreationRate = "connection_creation_rate"
)

// QuotaComponent is one component of a quota entity; Name nil is the
// type's default.
type QuotaComponent struct {
	Type string  `json:"type"`
	Name *string `json:"name,omitempty"`
}

// ClientQuota is one entity's quotas.
type ClientQuota struct {
	// Entity's components are sorted by type (Canonical).
	Entity []QuotaComponent   `json:"entity"`
	Values map[string]float64 `json:"values"`
}

// ErrInvalidQuota reports an entity or a quota Kafka would refuse.
var ErrInvalidQuota = errors.New("meta: invalid client quota")

// Canonical returns the entity's components sorted by type, checked: only
// user, client-id and ip; no type twice; ip alone; names of a user or
// client-id any string, an ip's a valid address.
func Canonical(entity []QuotaComponent) ([]QuotaComponent, error) {
	if len(entity) == 0 {
		return nil, fmt.Errorf("%w: an entity needs a component", ErrInvalidQuota)
	}
	out := slices.Clone(entity)
	slices.SortFunc(out, func(a, b QuotaComponent) int { return strings.Compare(a.Type, b.Type) })
	for i, c := range out {
		switch c.Type {
		case QuotaUser, QuotaClientID:
		case QuotaIP:
			if len(out) > 1 {
				return nil, fmt.Errorf("%w: an ip entity cannot be combined with others", ErrInvalidQuota)
			}
			if c.Name != nil && net.ParseIP(*c.Name) == nil {
				return nil, fmt.Errorf("%w: %q is not an IP address", ErrInvalidQuota, *c.Name)
			}
		default:
			return nil, fmt.Errorf("%w: unknown entity type %q", ErrInvalidQuota, c.Type)
		}
		if c.Name != nil && *c.Name == "" {
			return nil, fmt.Errorf("%w: empty %s not supported", ErrInvalidQuota, c.Type)
		}
		if i > 0 && out[i-1].Type == c.Type {
			return nil, fmt.Errorf("%w: entity type %q given twice", ErrInvalidQuota, c.Type)
		}
	}
	return out, nil
}

// EntityString is a canonical entity's unique text form: type=name pairs
// joined by '&', names %-escaped, the default as type=<default>.
func EntityString(entity []QuotaComponent) string {
	var b strings.Builder
	for i, c := range entity {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(c.Type)
		b.WriteByte('=')
		if c.Name == nil {
			b.WriteString("<default>")
			continue
		}
		for _, r := range []byte(*c.Name) {
			if r == '%' || r == '&' || r == '=' || r == '<' || r < 0x20 || r >= 0x7f {
				fmt.Fprintf(&b, "%%%02X", r)
				continue
			}
			b.WriteByte(r)
		}
	}
	return b.String()
}

// ValidateQuotaValue checks that key may be set for a canonical entity to
// value: Kafka's keys for the entity's kind, a positive value, whole for
// the rates counted in bytes or connections.
func ValidateQuotaValue(entity []QuotaComponent, key string, value float64) error {
	ip := len(entity) == 1 && entity[0].Type == QuotaIP
	switch key {
	case QuotaProducerByteRate, QuotaConsumerByteRate, QuotaRequestPercentage, QuotaControllerMutationRate:
		if ip {
			return fmt.Errorf("%w: %s does not apply to an ip entity", ErrInvalidQuota, key)
		}
	case QuotaConnectionCreationRate:
		if !ip {
			return fmt.Errorf("%w: %s applies to ip entities only", ErrInvalidQuota, key)
		}
	default:
		return fmt.Errorf("%w: unknown quota key %q", ErrInvalidQuota, key)
	}
	if math.IsNaN(value) || math.IsInf(value, 0) || value <= 0 {
		return fmt.Errorf("%w: %s must be positive, got %v", ErrInvalidQuota, key, value)
	}
	if (key == QuotaProducerByteRate || key == QuotaConsumerByteRate || key == QuotaConnectionCreationRate) && value != math.Trunc(value) {
		return fmt.Errorf("%w: %s must be a whole number, got %v", ErrInvalidQuota, key, value)
	}
	return nil
}
