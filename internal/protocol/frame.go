package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Errors returned by the frame helpers and logged (at debug level) when the
// server closes a connection over bad input.
var (
	// ErrFrameSize means a size prefix is negative or above the limit.
	ErrFrameSize = errors.New("protocol: frame size out of range")
	// ErrMalformed means a header or body could not be decoded.
	ErrMalformed = errors.New("protocol: malformed message")
	// ErrUnknownKey means the API key is not one kmsg knows or the server
	// implements.
	ErrUnknownKey = errors.New("protocol: unknown api key")
	// ErrUnsupportedVersion means the API version is outside the server's
	// range for the key (ApiVersions above its range is answered instead).
	ErrUnsupportedVersion = errors.New("protocol: unsupported api version")
)

const (
	// apiVersionsKey is the ApiVersions API key. Its response header never
	// has a tag section, whatever the version (KIP-511), so that a client
	// can always parse it before it knows what the broker supports.
	apiVersionsKey = 18

	// minRequestHeader is the smallest v1 request header: api_key int16,
	// api_version int16, correlation_id int32, client_id length int16.
	minRequestHeader = 2 + 2 + 4 + 2
)

// VersionsFunc reports the implemented version range of an API key.
type VersionsFunc func(key int16) (min, max int16, ok bool)

// kmsgMaxVersions holds kmsg's highest version of every request key, -1
// for keys kmsg does not know.
var kmsgMaxVersions = func() (max [kmsg.MaxKey + 1]int16) {
	for key := range max {
		max[key] = -1
		if req := kmsg.RequestForKey(int16(key)); req != nil {
			max[key] = req.MaxVersion()
		}
	}
	return max
}()

// kmsgVersions accepts every key and version kmsg can decode.
func kmsgVersions(key int16) (int16, int16, bool) {
	if key < 0 || int(key) >= len(kmsgMaxVersions) || kmsgMaxVersions[key] < 0 {
		return 0, 0, false
	}
	return 0, kmsgMaxVersions[key], true
}

// decoder turns request frames into Requests. One decoder belongs to one
// connection's read goroutine.
type decoder struct {
	versions VersionsFunc
}

// decode parses one frame (the bytes after the size prefix). The returned
// request's Body aliases frame.
func (d *decoder) decode(frame []byte) (req *Request, err error) {
	// kmsg decoders are meant to fail with an error, never a panic; this is
	// the belt to that pair of braces, because a panic here would take the
	// whole broker down.
	defer func() {
		if r := recover(); r != nil {
			req, err = nil, fmt.Errorf("%w: decoder panic: %v", ErrMalformed, r)
		}
	}()
	if len(frame) < minRequestHeader {
		return nil, fmt.Errorf("%w: %d-byte frame is shorter than a request header", ErrMalformed, len(frame))
	}
	key := int16(binary.BigEndian.Uint16(frame[0:]))
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	correlationID := int32(binary.BigEndian.Uint32(frame[4:]))

	body := kmsg.RequestForKey(key)
	minV, maxV, ok := d.versions(key)
	if body == nil || !ok {
		return nil, fmt.Errorf("%w: key %d", ErrUnknownKey, key)
	}
	maxV = min(maxV, body.MaxVersion())
	r := &Request{Key: key, Version: version, CorrelationID: correlationID}

	rd := kbin.Reader{Src: frame[8:]}
	r.ClientID = rd.NullableString()
	if !rd.Ok() {
		return nil, fmt.Errorf("%w: bad client id in request header", ErrMalformed)
	}

	if version < minV || version > maxV {
		if key != apiVersionsKey || version <= maxV {
			return nil, fmt.Errorf("%w: key %d version %d, supported %d..%d", ErrUnsupportedVersion, key, version, minV, maxV)
		}
		// Kafka answers an ApiVersions request it cannot parse with a v0
		// response listing what it supports; the body (and any header
		// tags, whose presence depends on the unknown version) is not
		// parsed.
		body.SetVersion(0)
		r.Version = 0
		r.UnsupportedVersion = version
		r.Body = body
		return r, nil
	}

	body.SetVersion(version)
	if body.IsFlexible() {
		kmsg.SkipTags(&rd)
		if !rd.Ok() {
			return nil, fmt.Errorf("%w: bad tag section in request header", ErrMalformed)
		}
	}
	src := rd.Src
	if err := body.ReadFrom(src); err != nil {
		return nil, fmt.Errorf("%w: key %d version %d body: %v", ErrMalformed, key, version, err)
	}
	// Bytes after the last field are ignored, as Kafka's generated
	// readers ignore them: clients send some (librdkafka 2.1+ Metadata
	// for all topics, librdkafka#5049; kafka-go's DescribeAcls v2+).
	r.Body = body
	return r, nil
}

// appendResponse appends one response frame: size, correlation id, the
// response header's tag section when the response is flexible (never for
// ApiVersions), and the body.
func appendResponse(dst []byte, correlationID int32, body kmsg.Response) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt32(dst, correlationID)
	if body.IsFlexible() && body.Key() != apiVersionsKey {
		dst = append(dst, 0)
	}
	dst = body.AppendTo(dst)
	size := len(dst) - start - 4
	if size > math.MaxInt32 {
		return dst[:start], fmt.Errorf("%w: %d-byte response", ErrFrameSize, size)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(size))
	return dst, nil
}

// appendRawResponse appends the frame of r, but for its parts: the size
// prefix counts them, and they are returned with their offsets in dst.
func appendRawResponse(dst []byte, correlationID int32, r *RawResponse) ([]byte, []RawPart, error) {
	size := r.size()
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt32(dst, correlationID)
	if r.IsFlexible() && r.Key() != apiVersionsKey {
		dst = append(dst, 0)
	}
	size += int64(len(dst) - start - 4)
	if size > math.MaxInt32 {
		return dst[:start], nil, fmt.Errorf("%w: %d-byte response", ErrFrameSize, size)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(size))
	base := len(dst)
	dst = append(dst, r.Body...)
	parts := make([]RawPart, len(r.Parts))
	for i, p := range r.Parts {
		if p.At < 0 || p.At > len(r.Body) || i > 0 && p.At < r.Parts[i-1].At {
			return dst[:start], nil, fmt.Errorf("protocol: raw response part %d at %d of a %d-byte body", i, p.At, len(r.Body))
		}
		parts[i] = RawPart{At: base + p.At, Data: p.Data}
	}
	return dst, parts, nil
}

// AppendRequest appends req as a complete request frame, size prefix
// included, to dst: a v1 request header (api key, version, correlation id,
// nullable client id) followed, for flexible versions, by an empty tag
// section (header v2), then the body at req.GetVersion().
func AppendRequest(dst []byte, req kmsg.Request, correlationID int32, clientID *string) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt16(dst, req.Key())
	dst = kbin.AppendInt16(dst, req.GetVersion())
	dst = kbin.AppendInt32(dst, correlationID)
	dst = kbin.AppendNullableString(dst, clientID)
	if req.IsFlexible() {
		dst = append(dst, 0)
	}
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// ReadResponse reads one size-prefixed frame from r and returns it without
// the prefix. A size that is negative or larger than max returns ErrFrameSize
// before anything is allocated.
func ReadResponse(r io.Reader, max int32) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > max {
		return nil, fmt.Errorf("%w: %d bytes, max %d", ErrFrameSize, n, max)
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(r, frame); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return frame, nil
}

// DecodeResponse parses a response frame as read by ReadResponse into resp,
// whose version must already be set to the request's, and returns the
// frame's correlation id. The header's tag section is skipped for flexible
// responses other than ApiVersions.
func DecodeResponse(frame []byte, resp kmsg.Response) (correlationID int32, err error) {
	rd := kbin.Reader{Src: frame}
	correlationID = rd.Int32()
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		kmsg.SkipTags(&rd)
	}
	if !rd.Ok() {
		return 0, fmt.Errorf("%w: short response header", ErrMalformed)
	}
	if err := resp.ReadFrom(rd.Src); err != nil {
		return correlationID, fmt.Errorf("%w: key %d version %d: %v", ErrMalformed, resp.Key(), resp.GetVersion(), err)
	}
	return correlationID, nil
}
