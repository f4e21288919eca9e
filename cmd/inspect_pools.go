package cmd

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/leatdev/leat/controlplane"
	"github.com/urfave/cli/v2"
)

func poolsInspectFlag() cli.Flag {
	return &cli.BoolFlag{Name: flagPools, Usage: "show the workers of the app's control plane: pool, revision, health, queues, last setup",
		DisableDefaultText: true}
}

// inspectPools prints the control plane's workers and deployments.
func inspectPools(c *cli.Context, setup Setup) error {
	if c.NArg() > 0 {
		return usageErrorf("inspect --%s takes no arguments", flagPools)
	}
	a, err := openApp(c, setup)
	if err != nil {
		return err
	}
	defer a.Close()
	v, err := controlplane.Read(c.Context, a.Client(), a.Config().KeyPrefix, a.Name())
	if err != nil {
		return fmt.Errorf("inspect the workers of app %q: %w", a.Name(), err)
	}
	if c.Bool(flagJSON) {
		return writeJSON(c, v)
	}
	w := c.App.Writer
	if len(v.Deployments) == 0 && len(v.Workers) == 0 {
		_, err := fmt.Fprintf(w, "app %q has no control plane workers (leat serve --pools registers them)\n", a.Name())
		return err
	}
	rows := make([][]string, 0, len(v.Deployments))
	for _, d := range v.Deployments {
		rows = append(rows, []string{d.Deployment, short(d.Revision), quoteTerm(d.Source), ago(d.ResolvedAt), quoteTerm(firstLine(d.Error))})
	}
	table(w, "DEPLOYMENT\tREVISION\tSOURCE\tRESOLVED\tERROR", rows)
	fmt.Fprintln(w)
	rows = rows[:0]
	for _, x := range v.Workers {
		setup := "-"
		if s := x.Setup; s != nil {
			setup = short(s.Revision) + " ok"
			if !s.OK {
				setup = short(s.Revision) + " failed: " + quoteTerm(firstLine(s.Error))
			}
		}
		rev := short(x.Revision)
		if x.Revision != x.Desired {
			rev += " (wants " + short(x.Desired) + ")"
		}
		health := x.Health
		if x.Error != "" {
			health += ": " + quoteTerm(firstLine(x.Error))
		}
		rows = append(rows, []string{x.Pool, x.ID, quoteTerm(x.Host), rev, health, strings.Join(x.Queues, ","),
			strconv.Itoa(x.Handlers), setup, ago(x.Seen)})
	}
	table(w, "POOL\tWORKER\tHOST\tREVISION\tHEALTH\tQUEUES\tHANDLERS\tSETUP\tSEEN", rows)
	return nil
}

// short is the first 12 characters of a revision, or "-".
func short(rev string) string {
	if rev == "" {
		return "-"
	}
	return rev[:min(12, len(rev))]
}

// firstLine is s up to its first line break.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// ago says how long ago t was, to the second.
func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return time.Since(t).Round(time.Second).String() + " ago"
}
