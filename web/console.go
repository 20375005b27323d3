// Package web serves samsa's web console on the metrics listener:
// the brokers, the topics and their partitions with the seeds' three
// health states (healthy, under-replicated, offline), the explained ISR
// health of each partition, the consumer groups with their members,
// assignments and lag, and live throughput per topic (docs/console.md).
//
// Pages are rendered on the server from html/template with the style
// sheet and a small script embedded in the binary: no build step, and
// every page reads without the script (it only refreshes the page's main
// part every few seconds). The console is read-only and has no login:
// like /metrics it is for the network metrics.listener is bound to
// (localhost by default).
//
// Where the data comes from:
//   - brokers, topics, partitions and health: this broker's metadata
//     (broker.Broker.Cluster), as every broker has it; no request is made;
//   - the explain view and the ISR history: each partition's leader,
//     from its metrics listener's /v1/partitions (the advertised URL is
//     in its registration), this broker's own directly;
//   - throughput: every broker's /v1/throughput counters, two samples
//     apart; records and bytes in are counted by leaders, so the sum over
//     the brokers is the cluster's;
//   - consumer groups and lag: Kafka requests through the broker's
//     admin client (broker.Broker.AdminClient), as any admin tool.
package web

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/samsa-io/samsa/internal/broker"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// requestTimeout bounds what a page waits for other brokers and for the
// cluster's answers: a page with a missing part beats a page that hangs.
const requestTimeout = 3 * time.Second

// Console serves the pages. It is safe for concurrent use.
type Console struct {
	current *broker.Current
	totals  func() map[string]TopicTotals
	logger  *slog.Logger
	client  *http.Client
	pages   map[string]*template.Template

	mu sync.Mutex
	// samples holds each broker's last throughput counters and the rates
	// derived from the sample before them.
	samples map[int32]*sample
	// histories caches the topics' ISR history reads (isrHistory).
	histories map[[16]byte]cachedHistory
}

// TopicTotals are a topic's counts on one broker since it started, as
// the metrics listener's /v1/throughput serves them: bytes and records
// appended by produce requests, bytes sent to consumers.
type TopicTotals struct {
	BytesIn    int64 `json:"bytes_in"`
	MessagesIn int64 `json:"messages_in"`
	BytesOut   int64 `json:"bytes_out"`
}

// New returns the console of a broker process: current holds its serving
// incarnation, totals are its own throughput counters (samsa server reads
// them from internal/metrics).
func New(current *broker.Current, totals func() map[string]TopicTotals, logger *slog.Logger) *Console {
	c := &Console{current: current, totals: totals, logger: logger,
		client: &http.Client{Timeout: requestTimeout, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a metrics listener does not redirect
		}}, pages: map[string]*template.Template{},
		samples: map[int32]*sample{}, histories: map[[16]byte]cachedHistory{}}
	for _, page := range []string{"overview", "topic", "groups", "group", "unavailable"} {
		c.pages[page] = template.Must(template.New("layout.html").Funcs(funcs).
			ParseFS(templateFS, "templates/layout.html", "templates/"+page+".html"))
	}
	return c
}

// Register adds the console's routes to mux: / (overview), /topics/{name},
// /groups, /groups/{name} and /static/.
func (c *Console) Register(mux *http.ServeMux) {
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", c.serve("overview", c.overview))
	mux.HandleFunc("GET /topics/{topic}", c.serve("topic", c.topic))
	mux.HandleFunc("GET /groups", c.serve("groups", c.groups))
	mux.HandleFunc("GET /groups/{group}", c.serve("group", c.group))
}

// page is what every page's layout shows besides its own data.
type page struct {
	Title   string
	NodeID  int32
	Section string
	Now     time.Time
	Data    any
}

// errNotFound makes a page answer 404.
type errNotFound string

func (e errNotFound) Error() string { return string(e) }

// serve renders page with what build returns for the serving incarnation.
func (c *Console) serve(name string, build func(ctx context.Context, b *broker.Broker, r *http.Request) (string, any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		b := c.current.Get()
		if b == nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			c.render(w, "unavailable", page{Title: "not serving", Now: time.Now(),
				Data: "This broker is starting or registering again; the console is back once it serves."})
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		title, data, err := build(ctx, b, r)
		if err != nil {
			var nf errNotFound
			status := http.StatusInternalServerError
			if errors.As(err, &nf) {
				status = http.StatusNotFound
			}
			w.WriteHeader(status)
			c.render(w, "unavailable", page{Title: "error", NodeID: b.NodeID(), Now: time.Now(), Data: err.Error()})
			return
		}
		c.render(w, name, page{Title: title, NodeID: b.NodeID(), Section: name, Now: time.Now(), Data: data})
	}
}

func (c *Console) render(w http.ResponseWriter, name string, p page) {
	if err := c.pages[name].Execute(w, p); err != nil {
		// The header is sent: all that is left is to say so in the log.
		c.logger.Warn("console: rendering a page failed", "page", name, "err", err)
	}
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"ids": func(ids []int32) string {
		if len(ids) == 0 {
			return "none"
		}
		s := ""
		for i, id := range ids {
			if i > 0 {
				s += ","
			}
			s += fmt.Sprint(id)
		}
		return s
	},
	"bytes": humanBytes,
	"rate": func(v float64, ok bool) string {
		if !ok {
			return "—"
		}
		return fmt.Sprintf("%.0f", v)
	},
	"byterate": func(v float64, ok bool) string {
		if !ok {
			return "—"
		}
		return humanBytes(int64(v)) + "/s"
	},
	"ago": func(ms int64) string {
		if ms < 0 {
			return "never"
		}
		return (time.Duration(ms) * time.Millisecond).Round(100*time.Millisecond).String() + " ago"
	},
	"since": func(t time.Time) string {
		return time.Since(t).Round(time.Second).String()
	},
	"clock": func(t time.Time) string { return t.UTC().Format("15:04:05 UTC") },
	"changeTime": func(ms int64) string {
		return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05")
	},
	"leader": func(id int32) string {
		if id < 0 {
			return "none"
		}
		return fmt.Sprint(id)
	},
	// leftISR is the newest change of h that took replica id out of the
	// ISR, nil if none is kept.
	"leftISR": func(h []broker.ISRChange, id int32) *broker.ISRChange {
		for i := len(h) - 1; i >= 0; i-- {
			if slices.Contains(h[i].PreviousISR, id) && !slices.Contains(h[i].ISR, id) {
				return &h[i]
			}
		}
		return nil
	},
	// pathEscape makes a name one segment of a link's path (group names
	// are free text: '/', '?', '#' included).
	"pathEscape": url.PathEscape,
	"newestFirst": func(h []broker.ISRChange) []broker.ISRChange {
		out := slices.Clone(h)
		slices.Reverse(out)
		return out
	},
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
