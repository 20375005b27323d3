// Tests of the deployment files in deploy/: the Helm chart in deploy/helm,
// rendered here without helm, and the systemd unit deploy/samsa.service.
//
// The renderer executes the chart's templates with text/template and the
// few template functions they use (include, printf, quote, toYaml,
// nindent, int, until), with .Values from values.yaml, .Chart from
// Chart.yaml and a made-up .Release. Every rendered document is parsed as
// YAML and checked against the values it was rendered with: a chart that
// stops following its values (replicas, storage, ports) fails here.
package deploy_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	"go.yaml.in/yaml/v2"

	"github.com/samsa-io/samsa/internal/broker"
)

const chartDir = "helm"

// release is what helm install would pass as .Release.
type release struct {
	Name, Namespace string
}

var testRelease = release{Name: "kafka", Namespace: "streaming"}

// normalize turns yaml.v2's map[interface{}]interface{} into
// map[string]any, recursively, as Helm's values are.
func normalize(v any) any {
	switch v := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[fmt.Sprint(k)] = normalize(e)
		}
		return m
	case []any:
		for i := range v {
			v[i] = normalize(v[i])
		}
		return v
	}
	return v
}

func readYAMLFile(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	m, ok := normalize(v).(map[string]any)
	if !ok {
		t.Fatalf("%s: not a mapping", path)
	}
	return m
}

// loadValues reads the chart's values.yaml.
func loadValues(t *testing.T) map[string]any {
	t.Helper()
	return readYAMLFile(t, filepath.Join(chartDir, "values.yaml"))
}

// chartMeta is .Chart: Chart.yaml with Helm's capitalized field names.
func chartMeta(t *testing.T) map[string]any {
	t.Helper()
	c := readYAMLFile(t, filepath.Join(chartDir, "Chart.yaml"))
	meta := map[string]any{}
	for k, v := range c {
		meta[strings.ToUpper(k[:1])+k[1:]] = v
	}
	return meta
}

// toInt converts a YAML or template number as sprig's int does.
func toInt(v any) (int, error) {
	switch n := v.(type) {
	case int:
		return n, nil
	case int64:
		return int(n), nil
	case float64:
		return int(n), nil
	case string:
		return strconv.Atoi(n)
	}
	return 0, fmt.Errorf("int: %v (%T) is not a number", v, v)
}

// render executes every template of the chart that is not a helper
// (_*.tpl) and returns the output by file name.
func render(t *testing.T, values map[string]any, rel release) map[string]string {
	t.Helper()
	var tpl *template.Template
	funcs := template.FuncMap{
		"include": func(name string, data any) (string, error) {
			var buf bytes.Buffer
			err := tpl.ExecuteTemplate(&buf, name, data)
			return buf.String(), err
		},
		"quote": func(v any) string { return strconv.Quote(fmt.Sprint(v)) },
		"toYaml": func(v any) (string, error) {
			b, err := yaml.Marshal(v)
			return strings.TrimSuffix(string(b), "\n"), err
		},
		"nindent": func(n int, s string) string {
			pad := strings.Repeat(" ", n)
			return "\n" + pad + strings.ReplaceAll(s, "\n", "\n"+pad)
		},
		"int": toInt,
		"until": func(n int) []int {
			s := make([]int, max(n, 0))
			for i := range s {
				s[i] = i
			}
			return s
		},
	}
	tpl = template.New("chart").Funcs(funcs).Option("missingkey=error")
	files, err := filepath.Glob(filepath.Join(chartDir, "templates", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		if _, err := tpl.New(name).Parse(string(b)); err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		if !strings.HasPrefix(name, "_") {
			names = append(names, name)
		}
	}
	data := map[string]any{
		"Values":  values,
		"Chart":   chartMeta(t),
		"Release": map[string]any{"Name": rel.Name, "Namespace": rel.Namespace, "Service": "Helm"},
	}
	out := map[string]string{}
	for _, name := range names {
		var buf bytes.Buffer
		if err := tpl.ExecuteTemplate(&buf, name, data); err != nil {
			t.Fatalf("render %s: %v", name, err)
		}
		out[name] = buf.String()
	}
	return out
}

// parseDocs parses the rendered files into Kubernetes objects.
func parseDocs(t *testing.T, files map[string]string) []map[string]any {
	t.Helper()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var docs []map[string]any
	for _, name := range names {
		for i, part := range regexp.MustCompile(`(?m)^---\s*$`).Split(files[name], -1) {
			var v any
			if err := yaml.Unmarshal([]byte(part), &v); err != nil {
				t.Fatalf("%s, document %d: %v\n%s", name, i, err, part)
			}
			if v == nil {
				continue // empty, or comments only
			}
			m, ok := normalize(v).(map[string]any)
			if !ok || m["kind"] == nil || m["apiVersion"] == nil {
				t.Fatalf("%s, document %d: not a Kubernetes object:\n%s", name, i, part)
			}
			docs = append(docs, m)
		}
	}
	return docs
}

// get walks a path of map keys and list indexes.
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// problems collects what checkChart finds wrong.
type problems []string

func (p *problems) addf(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// checkChart checks the rendered objects against the values and release
// they were rendered with; it returns every problem found.
func checkChart(docs []map[string]any, values map[string]any, rel release) problems {
	var p problems
	replicas, err := toInt(values["replicas"])
	if err != nil {
		p.addf("values: replicas: %v", err)
		return p
	}
	ports := values["ports"].(map[string]any)
	kafkaPort, etcdClientPort := str(ports["kafka"]), str(ports["etcdClient"])
	etcdPeerPort, metricsPort := str(ports["etcdPeer"]), str(ports["metrics"])
	headless := rel.Name + "-headless"
	domain := fmt.Sprintf("%s.%s.svc.%s", headless, rel.Namespace, str(values["clusterDomain"]))

	byKind := map[string][]map[string]any{}
	for _, d := range docs {
		byKind[str(d["kind"])] = append(byKind[str(d["kind"])], d)
		if ns := str(get(d, "metadata", "namespace")); ns != rel.Namespace {
			p.addf("%s %s: namespace %q, want %q", d["kind"], get(d, "metadata", "name"), ns, rel.Namespace)
		}
	}

	// Services: one headless with every port, one for clients.
	var headlessSvc, clientSvc map[string]any
	for _, s := range byKind["Service"] {
		if str(get(s, "spec", "clusterIP")) == "None" {
			headlessSvc = s
		} else {
			clientSvc = s
		}
	}
	if n := len(byKind["Service"]); n != 2 {
		p.addf("%d Services, want 2 (headless and client)", n)
	}
	if headlessSvc == nil {
		p.addf("no headless Service (clusterIP: None)")
	} else {
		if name := str(get(headlessSvc, "metadata", "name")); name != headless {
			p.addf("headless Service named %q, want %q", name, headless)
		}
		if get(headlessSvc, "spec", "publishNotReadyAddresses") != true {
			p.addf("headless Service: publishNotReadyAddresses must be true (etcd peers resolve each other before they are ready)")
		}
		want := map[string]string{"kafka": kafkaPort, "etcd-client": etcdClientPort, "etcd-peer": etcdPeerPort, "metrics": metricsPort}
		got := map[string]string{}
		for _, port := range asList(get(headlessSvc, "spec", "ports")) {
			got[str(get(port, "name"))] = str(get(port, "port"))
		}
		if !reflect.DeepEqual(got, want) {
			p.addf("headless Service ports %v, want %v", got, want)
		}
	}
	if clientSvc == nil {
		p.addf("no client Service")
	} else if !hasPort(get(clientSvc, "spec", "ports"), kafkaPort) {
		p.addf("client Service lacks the Kafka port %s", kafkaPort)
	}

	// PodDisruptionBudget.
	pdb := get(values, "podDisruptionBudget")
	if pdbs := byKind["PodDisruptionBudget"]; get(pdb, "enabled") == true {
		if len(pdbs) != 1 {
			p.addf("%d PodDisruptionBudgets, want 1", len(pdbs))
		} else if got, want := str(get(pdbs[0], "spec", "maxUnavailable")), str(get(pdb, "maxUnavailable")); got != want {
			p.addf("PodDisruptionBudget maxUnavailable %s, want %s", got, want)
		}
	}

	// StatefulSet.
	sets := byKind["StatefulSet"]
	if len(sets) != 1 {
		p.addf("%d StatefulSets, want 1", len(sets))
		return p
	}
	sts := sets[0]
	if got, err := toInt(get(sts, "spec", "replicas")); err != nil || got != replicas {
		p.addf("StatefulSet replicas %v, want %d", get(sts, "spec", "replicas"), replicas)
	}
	if got := str(get(sts, "spec", "serviceName")); got != headless {
		p.addf("StatefulSet serviceName %q, want %q", got, headless)
	}
	if got := str(get(sts, "spec", "podManagementPolicy")); got != "Parallel" {
		p.addf("StatefulSet podManagementPolicy %q, want Parallel (etcd members must start together)", got)
	}
	selector, _ := get(sts, "spec", "selector", "matchLabels").(map[string]any)
	podLabels, _ := get(sts, "spec", "template", "metadata", "labels").(map[string]any)
	if len(selector) == 0 {
		p.addf("StatefulSet has no selector")
	}
	for k, v := range selector {
		if podLabels[k] != v {
			p.addf("pod template label %s=%v, selector wants %v", k, podLabels[k], v)
		}
	}
	for _, s := range append(byKind["Service"], byKind["PodDisruptionBudget"]...) {
		sel, _ := get(s, "spec", "selector").(map[string]any)
		if m, ok := sel["matchLabels"].(map[string]any); ok {
			sel = m
		}
		if !reflect.DeepEqual(sel, selector) {
			p.addf("%s %s selects %v, the StatefulSet's pods are %v", s["kind"], get(s, "metadata", "name"), sel, selector)
		}
	}

	// Storage: one claim per broker, of the size in values.
	claims := asList(get(sts, "spec", "volumeClaimTemplates"))
	if len(claims) != 1 {
		p.addf("%d volumeClaimTemplates, want 1", len(claims))
	} else {
		if got, want := str(get(claims[0], "spec", "resources", "requests", "storage")), str(get(values, "persistence", "size")); got != want {
			p.addf("volumeClaimTemplates storage %q, want %q", got, want)
		}
		if got, want := str(get(claims[0], "spec", "storageClassName")), str(get(values, "persistence", "storageClassName")); got != want {
			p.addf("volumeClaimTemplates storageClassName %q, want %q", got, want)
		}
	}

	containers := asList(get(sts, "spec", "template", "spec", "containers"))
	if len(containers) != 1 {
		p.addf("%d containers, want 1", len(containers))
		return p
	}
	c := containers[0]
	var mountsData bool
	for _, m := range asList(get(c, "volumeMounts")) {
		if str(get(m, "name")) == str(get(claims, 0, "metadata", "name")) && str(get(m, "mountPath")) == "/data" {
			mountsData = true
		}
	}
	if !mountsData {
		p.addf("the container does not mount the claim at /data")
	}

	// Probes on the metrics port.
	containerPorts := map[string]string{}
	for _, port := range asList(get(c, "ports")) {
		containerPorts[str(get(port, "name"))] = str(get(port, "containerPort"))
	}
	for _, probe := range []struct{ key, path string }{{"livenessProbe", "/healthz"}, {"readinessProbe", "/readyz"}} {
		path := str(get(c, probe.key, "httpGet", "path"))
		port := str(get(c, probe.key, "httpGet", "port"))
		if named, ok := containerPorts[port]; ok {
			port = named
		}
		if path != probe.path || port != metricsPort {
			p.addf("%s GET %s on port %s, want %s on %s", probe.key, path, port, probe.path, metricsPort)
		}
	}

	// Environment from the downward API.
	env := map[string]string{}
	for _, e := range asList(get(c, "env")) {
		env[str(get(e, "name"))] = str(get(e, "valueFrom", "fieldRef", "fieldPath"))
	}
	wantEnv := map[string]string{
		"POD_INDEX": "metadata.labels['apps.kubernetes.io/pod-index']",
		"POD_NAME":  "metadata.name",
	}
	for k, v := range wantEnv {
		if env[k] != v {
			p.addf("env %s from %q, want %q", k, env[k], v)
		}
	}

	// Arguments, as Kubernetes expands them in every pod.
	args := asList(get(c, "args"))
	if len(args) == 0 || str(args[0]) != "server" {
		p.addf("args %v: want samsa server", args)
		return p
	}
	for _, a := range args {
		for _, m := range regexp.MustCompile(`\$\((\w+)\)`).FindAllStringSubmatch(str(a), -1) {
			if _, ok := env[m[1]]; !ok {
				p.addf("arg %q refers to $(%s), which is not in the container's env", a, m[1])
			}
		}
	}
	for ordinal := range replicas {
		pod := fmt.Sprintf("%s-%d", rel.Name, ordinal)
		podEnv := map[string]string{"POD_INDEX": strconv.Itoa(ordinal), "POD_NAME": pod}
		settings, errs := serverSettings(args, podEnv)
		for _, e := range errs {
			p.addf("pod %s: %v", pod, e)
		}
		p = append(p, checkPodSettings(pod, ordinal, settings, replicas, domain, kafkaPort, etcdClientPort, etcdPeerPort, metricsPort, values)...)
	}
	return p
}

// setting is one name=value of samsa server's command line.
type setting struct{ name, value string }

// serverSettings expands $(VAR) in args as Kubernetes does and turns the
// flags of samsa server into settings, in order, as samsa server does.
func serverSettings(args []any, env map[string]string) ([]setting, []error) {
	flags := map[string]string{
		"--node-id": "node.id", "--data-dir": "log.dirs",
		"--listeners": "listeners", "--advertised-listeners": "advertised.listeners",
	}
	var out []setting
	var errs []error
	for _, a := range args[1:] {
		arg := regexp.MustCompile(`\$\((\w+)\)`).ReplaceAllStringFunc(str(a), func(ref string) string {
			if v, ok := env[ref[2:len(ref)-1]]; ok {
				return v
			}
			return ref
		})
		flag, value, ok := strings.Cut(arg, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("arg %q: want --flag=value", arg))
			continue
		}
		if flag == "--override" {
			name, v, ok := strings.Cut(value, "=")
			if !ok {
				errs = append(errs, fmt.Errorf("arg %q: want --override=name=value", arg))
				continue
			}
			out = append(out, setting{name, v})
			continue
		}
		name, known := flags[flag]
		if !known {
			errs = append(errs, fmt.Errorf("arg %q: not a samsa server flag the chart should use", arg))
			continue
		}
		out = append(out, setting{name, value})
	}
	// samsa's own parser must accept every setting.
	cfg := broker.DefaultConfig()
	for _, s := range out {
		if err := cfg.Set(s.name, s.value); err != nil {
			errs = append(errs, err)
		}
	}
	return out, errs
}

// checkPodSettings checks the settings one pod's broker runs with.
func checkPodSettings(pod string, ordinal int, settings []setting, replicas int, domain, kafkaPort, etcdClientPort, etcdPeerPort, metricsPort string, values map[string]any) problems {
	var p problems
	got := map[string]string{}
	for _, s := range settings {
		if _, dup := got[s.name]; dup {
			p.addf("pod %s: %s set twice", pod, s.name)
		}
		got[s.name] = s.value
	}
	podDNS := pod + "." + domain
	want := map[string]string{
		"node.id":                       strconv.Itoa(ordinal),
		"log.dirs":                      "/data/samsa",
		"listeners":                     "PLAINTEXT://0.0.0.0:" + kafkaPort,
		"advertised.listeners":          "PLAINTEXT://" + podDNS + ":" + kafkaPort,
		"metadata.etcd.client.url":      "http://0.0.0.0:" + etcdClientPort,
		"metadata.etcd.peer.url":        "http://" + podDNS + ":" + etcdPeerPort,
		"metadata.etcd.peer.listen.url": "http://0.0.0.0:" + etcdPeerPort,
		"metrics.listener":              "http://0.0.0.0:" + metricsPort,
	}
	for k, v := range get(values, "settings").(map[string]any) {
		want[k] = str(v)
	}
	for k, v := range want {
		if got[k] != v {
			p.addf("pod %s: %s=%q, want %q", pod, k, got[k], v)
		}
	}

	// The initial cluster: exactly one member per broker, named as samsa
	// names its embedded member (samsa-<node.id>), at the pod's DNS name.
	members := strings.Split(got["metadata.etcd.initial.cluster"], ",")
	if len(members) != replicas {
		p.addf("pod %s: initial cluster has %d members, want %d: %s", pod, len(members), replicas, got["metadata.etcd.initial.cluster"])
	}
	seen := map[string]bool{}
	for i, m := range members {
		name, peer, _ := strings.Cut(m, "=")
		wantName := fmt.Sprintf("samsa-%d", i)
		wantPeer := fmt.Sprintf("http://%s-%d.%s:%s", strings.TrimSuffix(pod, "-"+strconv.Itoa(ordinal)), i, domain, etcdPeerPort)
		if name != wantName || peer != wantPeer {
			p.addf("pod %s: initial cluster member %d is %q, want %s=%s", pod, i, m, wantName, wantPeer)
		}
		if seen[name] {
			p.addf("pod %s: member %s listed twice", pod, name)
		}
		seen[name] = true
	}
	// This broker's own member: its name and its peer DNS name.
	own := "samsa-" + got["node.id"] + "=http://" + podDNS + ":" + etcdPeerPort
	found := false
	for _, m := range members {
		found = found || m == own
	}
	if !found {
		p.addf("pod %s: its own member %s is not in the initial cluster", pod, own)
	}
	return p
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func hasPort(ports any, port string) bool {
	for _, p := range asList(ports) {
		if str(get(p, "port")) == port {
			return true
		}
	}
	return false
}

func renderDocs(t *testing.T, values map[string]any) []map[string]any {
	t.Helper()
	return parseDocs(t, render(t, values, testRelease))
}

func reportProblems(t *testing.T, p problems) {
	t.Helper()
	for _, s := range p {
		t.Error(s)
	}
}

// TestChartDefaults renders the chart with its values.yaml.
func TestChartDefaults(t *testing.T) {
	values := loadValues(t)
	docs := renderDocs(t, values)
	kinds := map[string]int{}
	for _, d := range docs {
		kinds[str(d["kind"])]++
	}
	want := map[string]int{"StatefulSet": 1, "Service": 2, "PodDisruptionBudget": 1}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	reportProblems(t, checkChart(docs, values, testRelease))
}

// TestChartFollowsValues renders the chart with other values: the checks
// follow them (five members, another size and storage class, other ports).
func TestChartFollowsValues(t *testing.T) {
	values := loadValues(t)
	values["replicas"] = 5
	values["clusterDomain"] = "example.internal"
	values["persistence"].(map[string]any)["size"] = "250Gi"
	values["persistence"].(map[string]any)["storageClassName"] = "fast-ssd"
	values["ports"].(map[string]any)["kafka"] = 19092
	values["ports"].(map[string]any)["etcdPeer"] = 12380
	values["settings"] = map[string]any{"num.partitions": "12"}
	values["podDisruptionBudget"] = map[string]any{"enabled": false}
	docs := renderDocs(t, values)
	reportProblems(t, checkChart(docs, values, testRelease))
	for _, d := range docs {
		if d["kind"] == "PodDisruptionBudget" {
			t.Error("PodDisruptionBudget rendered while disabled")
		}
	}
	// One explicit count, independent of checkChart.
	sts := docs[slicesIndex(docs, "StatefulSet")]
	for _, a := range asList(get(sts, "spec", "template", "spec", "containers", 0, "args")) {
		if v, ok := strings.CutPrefix(str(a), "--override=metadata.etcd.initial.cluster="); ok {
			if n := len(strings.Split(v, ",")); n != 5 {
				t.Errorf("initial cluster has %d members with replicas 5: %s", n, v)
			}
			if !strings.Contains(v, "samsa-4=http://kafka-4.kafka-headless.streaming.svc.example.internal:12380") {
				t.Errorf("initial cluster lacks pod 4: %s", v)
			}
		}
	}
}

func slicesIndex(docs []map[string]any, kind string) int {
	for i, d := range docs {
		if d["kind"] == kind {
			return i
		}
	}
	panic("no " + kind)
}

// TestChartChecksCanFail makes sure the checks catch a chart that does not
// match its values: rendered with one set of values, checked against
// another, or with a broken document.
func TestChartChecksCanFail(t *testing.T) {
	values := loadValues(t)
	n, err := toInt(values["replicas"])
	if err != nil || n < 1 {
		t.Fatalf("values.yaml replicas %v: want a positive number", values["replicas"])
	}
	docs := renderDocs(t, values)

	other := loadValues(t)
	other["replicas"] = n + 2
	other["persistence"].(map[string]any)["size"] = "1Ti"
	p := checkChart(docs, other, testRelease)
	for _, want := range []string{
		"StatefulSet replicas",
		fmt.Sprintf("initial cluster has %d members, want %d", n, n+2),
		"volumeClaimTemplates storage",
	} {
		if !strings.Contains(strings.Join(p, "\n"), want) {
			t.Errorf("checked against replicas %d and 1Ti: no problem %q reported; got:\n%s", n+2, want, strings.Join(p, "\n"))
		}
	}

	if n < 2 {
		return // no member to drop
	}
	// Drop the last member of the initial cluster and break a probe.
	broken := renderDocs(t, values)
	c := get(broken[slicesIndex(broken, "StatefulSet")], "spec", "template", "spec", "containers", 0).(map[string]any)
	args := asList(c["args"])
	for i, a := range args {
		if v, ok := strings.CutPrefix(str(a), "--override=metadata.etcd.initial.cluster="); ok {
			args[i] = "--override=metadata.etcd.initial.cluster=" + v[:strings.LastIndex(v, ",")]
		}
	}
	c["readinessProbe"].(map[string]any)["httpGet"].(map[string]any)["path"] = "/healthz"
	p = checkChart(broken, values, testRelease)
	for _, want := range []string{
		fmt.Sprintf("initial cluster has %d members, want %d", n-1, n),
		fmt.Sprintf("own member samsa-%d", n-1),
		"readinessProbe GET /healthz",
	} {
		if !strings.Contains(strings.Join(p, "\n"), want) {
			t.Errorf("broken chart: no problem %q reported; got:\n%s", want, strings.Join(p, "\n"))
		}
	}
}

// unit parses a systemd unit file: section -> key -> values.
func unit(t *testing.T, path string) map[string]map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := map[string]map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s: bad line %q", path, line)
			}
			u[section][strings.TrimSpace(k)] = append(u[section][strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestSystemdUnit(t *testing.T) {
	u := unit(t, "samsa.service")
	svc := u["Service"]
	if svc == nil || u["Unit"] == nil || u["Install"] == nil {
		t.Fatalf("sections %v: want Unit, Service and Install", u)
	}
	one := func(key string) string {
		if len(svc[key]) != 1 {
			t.Errorf("%s set %d times, want once", key, len(svc[key]))
			return ""
		}
		return svc[key][0]
	}
	exec := strings.Fields(one("ExecStart"))
	if len(exec) < 2 || exec[0] != "/usr/local/bin/samsa" || exec[1] != "server" {
		t.Errorf("ExecStart %q: want /usr/local/bin/samsa server ...", exec)
	}
	if i := slicesIndexStr(exec, "--config"); i < 0 || i+1 >= len(exec) || exec[i+1] != "/etc/samsa/server.properties" {
		t.Errorf("ExecStart %q: want --config /etc/samsa/server.properties", exec)
	}
	for k, v := range map[string]string{"Type": "simple", "Restart": "on-failure", "KillSignal": "SIGTERM"} {
		if got := one(k); got != v {
			t.Errorf("%s=%q, want %q", k, got, v)
		}
	}
	if user := one("User"); user == "" || user == "root" {
		t.Errorf("User=%q: want a dedicated user", user)
	}
	if n, err := strconv.Atoi(one("LimitNOFILE")); err != nil || n < 65536 {
		t.Errorf("LimitNOFILE=%q: want a number of at least 65536", svc["LimitNOFILE"])
	}
	// The controlled shutdown alone may take 30 s (moving leaderships).
	if d, err := time.ParseDuration(one("TimeoutStopSec")); err != nil || d < 45*time.Second {
		t.Errorf("TimeoutStopSec=%q: want a duration of at least 45s (systemd's Go-compatible form, e.g. 90s)", svc["TimeoutStopSec"])
	}
}

func slicesIndexStr(s []string, v string) int {
	for i, e := range s {
		if e == v {
			return i
		}
	}
	return -1
}
