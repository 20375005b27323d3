package broker

import (
	"strings"
	"testing"
)

// Review finding: listener.name.<l>.ssl.endpoint.identification.algorithm
// is accepted (listenerSettings) but never applied: tlsSettings reads only
// the broker-wide ssl.endpoint.identification.algorithm. Kafka applies the
// inter-broker listener's prefixed value to the inter-broker client. An
// operator who turns host-name checks off broker-wide (say for a legacy
// client listener) but asks for them on the inter-broker listener gets
// inter-broker TLS without host-name verification, silently.
func TestReview1PerListenerEndpointIdentification(t *testing.T) {
	cfg := DefaultConfig()
	for k, v := range map[string]string{
		"listeners":                                                    "INTERNAL://127.0.0.1:0,CLIENT://127.0.0.1:0",
		"listener.security.protocol.map":                               "INTERNAL:SSL,CLIENT:SSL",
		"inter.broker.listener.name":                                   "INTERNAL",
		"ssl.endpoint.identification.algorithm":                        "",
		"listener.name.internal.ssl.endpoint.identification.algorithm": "https",
	} {
		if err := cfg.Set(k, v); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	if got := cfg.tlsSettings("INTERNAL").EndpointIdentification; got != "https" {
		t.Fatalf("inter-broker listener's endpoint identification is %q, want its own setting \"https\"", got)
	}
}

// Review finding: secrets echoed in configuration errors. ParseJAAS takes
// care never to put option values (passwords) in its errors, but
// Config.Set wraps every error with the whole value (config.go, Set's
// bad: "%s=%q"), so a JAAS config with a typo (here the missing ';') puts
// every PLAIN user's password into the error that samsa server prints and
// logs. ParseAddScram likewise quotes the whole --add-scram argument,
// password included, in its errors. Kafka shows password-type values as
// [hidden].
func TestReview1ConfigErrorsHideSecrets(t *testing.T) {
	cfg := DefaultConfig()
	err := cfg.Set("listener.name.client.plain.sasl.jaas.config",
		`org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-s3cret"`)
	if err == nil {
		t.Fatal("a JAAS config without ';' was accepted")
	}
	if strings.Contains(err.Error(), "alice-s3cret") {
		t.Errorf("Set's error shows the password: %v", err)
	}
	_, err = ParseAddScram("SCRAM-SHA-256=[name=admin,password=admin-s3cret,iterations=100]")
	if err == nil {
		t.Fatal("iterations=100 accepted")
	}
	if strings.Contains(err.Error(), "admin-s3cret") {
		t.Errorf("ParseAddScram's error shows the password: %v", err)
	}
}

// Review finding: security settings for a listener whose protocol does not
// use them are accepted and silently ignored. checkSecurity refuses a
// listener.name.<l>.* that names no listener, but not one that names a
// listener of the wrong protocol: a slip in listener.security.protocol.map
// (CLIENT:SSL for CLIENT:SASL_SSL, CLIENT:PLAINTEXT for CLIENT:SSL) leaves
// CLIENT without the authentication its SASL mechanisms, JAAS users or
// ssl.client.auth=required plainly ask for, and the broker starts without
// a word.
func TestReview1SecuritySettingsOnWrongProtocolRefused(t *testing.T) {
	for _, tc := range []struct{ proto, key, value string }{
		{"SSL", "listener.name.client.sasl.enabled.mechanisms", "PLAIN"},
		{"SSL", "listener.name.client.plain.sasl.jaas.config",
			`org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a";`},
		{"SASL_PLAINTEXT", "listener.name.client.ssl.client.auth", "required"},
	} {
		cfg := DefaultConfig()
		set := func(k, v string) {
			if err := cfg.Set(k, v); err != nil {
				t.Fatalf("%s: %v", k, err)
			}
		}
		set("listeners", "CLIENT://127.0.0.1:0")
		set("listener.security.protocol.map", "CLIENT:"+tc.proto)
		set("ssl.keystore.location", "/nonexistent/keystore.pem")
		set("sasl.enabled.mechanisms", "SCRAM-SHA-256")
		set("listener.name.client.scram-sha-256.sasl.jaas.config",
			`org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="b";`)
		set(tc.key, tc.value)
		lc, err := cfg.resolveListeners()
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.checkSecurity(lc); err == nil {
			t.Errorf("CLIENT is %s, yet %s=%s is accepted and ignored", tc.proto, tc.key, tc.value)
		}
	}
}
