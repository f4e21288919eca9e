package cmd

import (
	"errors"
	"fmt"

	leatconfig "github.com/leatdev/leat/config"
	"github.com/urfave/cli/v2"
)

const (
	flagApplyFile = "f"
	flagDryRun    = "dry-run"
)

func applyCommand() *cli.Command {
	return &cli.Command{
		Name:  "apply",
		Usage: "declare the streams and task queues of a leat.yaml file in the app's registry",
		Description: "Checks the whole file first: every mistake is reported with its line and field, and\n" +
			"nothing is written when there is one (exit status 2). Then compares the file with the\n" +
			"registry and prints, per stream and queue, added (with its settings), changed (each\n" +
			"setting old -> new) or unchanged; --dry-run stops there. Changes that would break what\n" +
			"is in Redis already are refused with the reason, and nothing is written: a stream's\n" +
			"partition count, key field or codec, a queue's keyed flag, a priority level removed,\n" +
			"renamed or moved. The definitions are written at once (one script), or not at all.\n" +
			"The app is the file's (app:) unless --app names it; the two must agree.",
		ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: flagApplyFile, Aliases: []string{"file"}, Usage: "the configuration `FILE` (leat.yaml)"},
			&cli.BoolFlag{Name: flagDryRun, Usage: "print what would change, write nothing"},
			helpFlag(),
		},
		HideHelp:     true,
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if err := wantArgs(c); err != nil {
				return err
			}
			if c.String(flagApplyFile) == "" {
				return usageErrorf("apply needs -f FILE, the configuration file (leat.yaml)")
			}
			f, err := loadConfigFile(c, c.String(flagApplyFile))
			if err != nil {
				return err
			}
			a, err := openApp(c, nil)
			if err != nil {
				return err
			}
			defer a.Close()
			p, err := leatconfig.NewPlan(c.Context, a, f)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprint(c.App.Writer, p.String()); err != nil {
				return err
			}
			if len(p.Refused) > 0 {
				return usageError{fileErrors{p.Refused, "refused; nothing was written"}}
			}
			switch {
			case c.Bool(flagDryRun):
				_, err = fmt.Fprintln(c.App.Writer, "dry run: nothing was written")
				return err
			case p.Empty():
				_, err = fmt.Fprintln(c.App.Writer, "no changes")
				return err
			}
			if err := p.Apply(c.Context); err != nil {
				if errors.Is(err, leatconfig.ErrChanged) {
					return fmt.Errorf("%w; run leat apply again", err)
				}
				return err
			}
			_, err = fmt.Fprintf(c.App.Writer, "applied to app %s\n", a.Name())
			return err
		},
	}
}

// fileErrors reports the mistakes of a file, one per line, then what came
// of them.
type fileErrors struct {
	errs leatconfig.Errors
	then string
}

func (e fileErrors) Error() string {
	return fmt.Sprintf("%d %s in %s (%s):\n%s", len(e.errs), plural(len(e.errs), "error"), e.errs[0].File, e.then, e.errs.Error())
}

func (e fileErrors) Unwrap() error { return e.errs }

// loadConfigFile reads and checks a configuration file, and makes its app
// the command's when --app is not given; a file that names another app
// than --app is a usage error.
func loadConfigFile(c *cli.Context, path string) (*leatconfig.File, error) {
	f, err := leatconfig.Load(path)
	var errs leatconfig.Errors
	if errors.As(err, &errs) {
		return nil, usageError{fileErrors{errs, "nothing was done"}}
	}
	if err != nil {
		return nil, usageError{err}
	}
	switch app := c.String(flagApp); {
	case f.App == "":
	case app == "":
		if err := c.Set(flagApp, f.App); err != nil {
			return nil, err
		}
	case app != f.App:
		return nil, usageErrorf("%s is for app %q, --app (or LEAT_APP) names %q", path, f.App, app)
	}
	return f, nil
}
