// Command toxiproxystub answers the part of toxiproxy's HTTP API that
// sarama's functional tests need before any fault is injected, so that the
// suite can run against samsa brokers without Docker or a real toxiproxy
// (test/compat/sarama.sh).
//
// sarama's TestMain reads TOXIPROXY_ADDR, asks for the proxies kafka1 to
// kafka5 (GET /proxies/kafkaN) and dials the addresses they listen on; its
// tests reset every proxy before and after they run (POST /reset). Here a
// proxy's listen address is a broker's own address, so there is nothing
// between client and broker: every request that would change a proxy
// (disable it, add a toxic) fails with 501 and the message below, and the
// tests that make one fail at that step instead of passing without their
// fault. sarama.sh skips those tests.
//
//	toxiproxystub -listen 127.0.0.1:28474 -proxy kafka1=127.0.0.1:29091 ...
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"
)

// proxy is toxiproxy's JSON form of a proxy (the fields sarama reads).
type proxy struct {
	Name     string `json:"name"`
	Listen   string `json:"listen"`
	Upstream string `json:"upstream"`
	Enabled  bool   `json:"enabled"`
	Toxics   []any  `json:"toxics"`
}

type proxyFlags map[string]string

func (p proxyFlags) String() string { return fmt.Sprint(map[string]string(p)) }

func (p proxyFlags) Set(v string) error {
	name, addr, ok := strings.Cut(v, "=")
	if !ok || name == "" || addr == "" {
		return fmt.Errorf("want name=host:port, got %q", v)
	}
	p[name] = addr
	return nil
}

const noFaults = "samsa compat stub: no real proxy, so no fault injection (see test/compat/sarama.sh)"

func main() {
	listen := flag.String("listen", "127.0.0.1:28474", "address of the HTTP API")
	proxies := proxyFlags{}
	flag.Var(proxies, "proxy", "name=host:port of a proxy and the broker address it stands for (repeatable)")
	flag.Parse()
	if len(proxies) == 0 {
		fmt.Fprintln(os.Stderr, "toxiproxystub: no -proxy given")
		os.Exit(2)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /proxies/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		addr, ok := proxies[name]
		if !ok {
			http.Error(w, "proxy not found", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(proxy{Name: name, Listen: addr, Upstream: addr, Enabled: true, Toxics: []any{}})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		log.Printf("refused %s %s", r.Method, r.URL.Path)
		http.Error(w, noFaults, http.StatusNotImplemented)
	})
	log.Fatal(http.ListenAndServe(*listen, mux))
}
