package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/samsa-io/samsa/internal/auth"
	"github.com/samsa-io/samsa/internal/broker"
)

// Client security, as Kafka's tools take it: --command-config names a
// client.properties file with security.protocol (PLAINTEXT, SSL,
// SASL_PLAINTEXT, SASL_SSL), sasl.mechanism (PLAIN, SCRAM-SHA-256,
// SCRAM-SHA-512), sasl.jaas.config (a PlainLoginModule or
// ScramLoginModule with username and password), and the ssl.* settings
// of a PEM truststore and, for mutual TLS, keystore. Other client
// settings in the file are ignored, as samsa's commands have flags of
// their own for them.

// clientSecuritySettings are the settings --command-config acts on.
var clientSecuritySettings = map[string]bool{
	"security.protocol": true, "sasl.mechanism": true, "sasl.jaas.config": true,
	"ssl.truststore.type": true, "ssl.truststore.location": true, "ssl.truststore.certificates": true,
	"ssl.truststore.password": true, "ssl.keystore.type": true, "ssl.keystore.location": true,
	"ssl.keystore.key": true, "ssl.keystore.certificate.chain": true, "ssl.keystore.password": true,
	"ssl.key.password": true, "ssl.endpoint.identification.algorithm": true,
}

// readCommandConfig reads the --command-config flag of cmd (any command
// of the tree) into g.
func (g *globalOptions) readCommandConfig(cmd *cobra.Command) {
	if f := cmd.Flag("command-config"); f != nil {
		g.commandConfig = f.Value.String()
	}
}

// securityOpts returns the client options of the --command-config file.
func (g *globalOptions) securityOpts() ([]kgo.Opt, error) {
	if g.commandConfig == "" {
		return nil, nil
	}
	f, err := os.Open(g.commandConfig)
	if err != nil {
		return nil, fmt.Errorf("--command-config: %w", err)
	}
	defer f.Close()
	props, err := broker.ReadProperties(f)
	if err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", g.commandConfig, err)
	}
	set := map[string]string{}
	for _, p := range props {
		if clientSecuritySettings[p.Key] {
			set[p.Key] = p.Value
		} else if strings.HasPrefix(p.Key, "ssl.") || strings.HasPrefix(p.Key, "sasl.") {
			return nil, fmt.Errorf("--command-config %s: line %d: %s is not supported", g.commandConfig, p.Line, p.Key)
		}
	}
	opts, err := clientSecurity(set)
	if err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", g.commandConfig, err)
	}
	return opts, nil
}

// clientSecurity turns client security settings into kgo options.
func clientSecurity(set map[string]string) ([]kgo.Opt, error) {
	proto := strings.ToUpper(set["security.protocol"])
	if proto == "" {
		proto = "PLAINTEXT"
	}
	var useTLS, useSASL bool
	switch proto {
	case "PLAINTEXT":
	case "SSL":
		useTLS = true
	case "SASL_PLAINTEXT":
		useSASL = true
	case "SASL_SSL":
		useTLS, useSASL = true, true
	default:
		return nil, fmt.Errorf("security.protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", set["security.protocol"])
	}
	var opts []kgo.Opt
	if useTLS {
		s := auth.TLSSettings{
			KeystoreType:           set["ssl.keystore.type"],
			KeystoreLocation:       set["ssl.keystore.location"],
			KeystoreKey:            set["ssl.keystore.key"],
			KeystoreCertChain:      set["ssl.keystore.certificate.chain"],
			KeyPassword:            set["ssl.key.password"],
			TruststoreType:         set["ssl.truststore.type"],
			TruststoreLocation:     set["ssl.truststore.location"],
			TruststoreCerts:        set["ssl.truststore.certificates"],
			EndpointIdentification: "https",
		}
		if v, ok := set["ssl.endpoint.identification.algorithm"]; ok {
			s.EndpointIdentification = v
		}
		cfg, err := auth.ClientConfig(s, "")
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if useSASL {
		j, err := auth.ParseJAAS(set["sasl.jaas.config"])
		if err != nil {
			return nil, fmt.Errorf("sasl.jaas.config: %w", err)
		}
		a := struct{ user, pass string }{j.Username(), j.Password()}
		var m sasl.Mechanism
		switch mech := strings.ToUpper(set["sasl.mechanism"]); mech {
		case auth.MechanismPlain:
			m = plain.Auth{User: a.user, Pass: a.pass}.AsMechanism()
		case auth.MechanismScramSHA256:
			m = scram.Auth{User: a.user, Pass: a.pass}.AsSha256Mechanism()
		case auth.MechanismScramSHA512:
			m = scram.Auth{User: a.user, Pass: a.pass}.AsSha512Mechanism()
		default:
			return nil, fmt.Errorf("sasl.mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", set["sasl.mechanism"])
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}
