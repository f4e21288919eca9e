package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// The operations kit beside the package: Prometheus alert rules, their
// promtool unit tests and a Grafana dashboard.
const (
	alertsFile    = "../ops/alerts.yml"
	alertsTest    = "../ops/alerts_test.yml"
	dashboardFile = "../ops/grafana-dashboard.json"
)

// exportedNames returns the names of the series the exporter can report:
// its metrics' names, with _bucket, _sum and _count for histograms.
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	x, err := New(Config{Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	names := map[string]bool{}
	for _, c := range x.collectors() {
		ch := make(chan *prometheus.Desc, 32)
		go func() { c.Describe(ch); close(ch) }()
		_, histogram := c.(*prometheus.HistogramVec)
		for d := range ch {
			m := fqName.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("no name in %s", d)
			}
			names[m[1]] = true
			if histogram {
				names[m[1]+"_bucket"], names[m[1]+"_sum"], names[m[1]+"_count"] = true, true, true
			}
		}
	}
	for _, want := range []string{"leat_lag", "leat_leader", "leat_ready", "leat_task_duration_seconds_bucket"} {
		if !names[want] {
			t.Fatalf("the exporter does not describe %s: %v", want, names)
		}
	}
	return names
}

// leatName matches the names of leat's series in a query.
var leatName = regexp.MustCompile(`\bleat_[a-z_]+`)

// unknownNames returns the leat_ names of query the exporter does not report.
func unknownNames(query string, names map[string]bool) []string {
	var unknown []string
	for _, n := range leatName.FindAllString(query, -1) {
		if !names[n] {
			unknown = append(unknown, n)
		}
	}
	return unknown
}

// TestDashboard: the dashboard is valid JSON for Grafana's import, asks
// for its Prometheus datasource as an input, and every query uses only
// series the exporter reports.
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Inputs []struct {
			Name     string `json:"name"`
			Type     string `json:"type"`
			PluginID string `json:"pluginId"`
		} `json:"__inputs"`
		Title  string            `json:"title"`
		UID    string            `json:"uid"`
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if len(d.Inputs) != 1 || d.Inputs[0].Name != "DS_PROMETHEUS" || d.Inputs[0].Type != "datasource" || d.Inputs[0].PluginID != "prometheus" {
		t.Errorf("inputs %+v, want one: DS_PROMETHEUS, prometheus", d.Inputs)
	}
	if d.Title == "" || d.UID == "" {
		t.Error("no title or uid")
	}
	names := exportedNames(t)
	type target struct {
		Expr       string `json:"expr"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
	}
	var panel struct {
		Type, Title string
		Targets     []target `json:"targets"`
	}
	used := map[string]bool{}
	queries := 0
	for _, raw := range d.Panels {
		panel.Targets = nil
		if err := json.Unmarshal(raw, &panel); err != nil {
			t.Fatal(err)
		}
		if panel.Type != "row" && len(panel.Targets) == 0 {
			t.Errorf("panel %q has no query", panel.Title)
		}
		for _, tg := range panel.Targets {
			queries++
			if tg.Datasource.UID != "${DS_PROMETHEUS}" {
				t.Errorf("panel %q: datasource %q, want ${DS_PROMETHEUS}", panel.Title, tg.Datasource.UID)
			}
			if len(leatName.FindAllString(tg.Expr, -1)) == 0 {
				t.Errorf("panel %q: query %q uses no leat series", panel.Title, tg.Expr)
			}
			if u := unknownNames(tg.Expr, names); len(u) > 0 {
				t.Errorf("panel %q: query %q uses %v, which the exporter does not report", panel.Title, tg.Expr, u)
			}
			for _, n := range leatName.FindAllString(tg.Expr, -1) {
				used[n] = true
			}
		}
	}
	if queries == 0 {
		t.Fatal("no query")
	}
	for _, n := range []string{"leat_events_processed_total", "leat_lag", "leat_pending", "leat_oldest_pending_age_seconds",
		"leat_partitions_assigned", "leat_rebalances_total", "leat_lock_losses_total", "leat_task_queue_tasks",
		"leat_task_queue_finished_per_second", "leat_task_queue_oldest_ready_age_seconds",
		"leat_task_duration_seconds_bucket", "leat_leader", "leat_ready"} {
		if !used[n] {
			t.Errorf("no panel shows %s", n)
		}
	}
	if err := jsonStrict(b); err != nil {
		t.Error(err)
	}
}

// jsonStrict reports trailing data after the dashboard's JSON object.
func jsonStrict(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the dashboard's JSON object")
	}
	return nil
}

// TestAlertRuleNames: every series the alert rules query is one the
// exporter reports.
func TestAlertRuleNames(t *testing.T) {
	b, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	names := exportedNames(t)
	exprs := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "runbook_url:") {
			continue
		}
		if strings.Contains(line, "expr:") {
			exprs++
		}
		if u := unknownNames(line, names); len(u) > 0 {
			t.Errorf("%s uses %v, which the exporter does not report: %s", alertsFile, u, strings.TrimSpace(line))
		}
	}
	if exprs == 0 {
		t.Fatal("no rule")
	}
}

// TestAlertRules checks the rules and runs their unit tests with promtool.
// Without promtool it is skipped, unless CI=true: then it fails.
func TestAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is missing (Debian: apt-get install prometheus)")
		}
		t.Skip("promtool is missing (Debian: apt-get install prometheus)")
	}
	for _, args := range [][]string{{"check", "rules", alertsFile}, {"test", "rules", alertsTest}} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
