package cmd

import (
	"errors"
	"io/fs"
	"os"

	leatconfig "github.com/leatdev/leat/config"
	"github.com/urfave/cli/v2"
)

func configCommand(setup Setup) *cli.Command {
	return &cli.Command{
		Name:         "config",
		Usage:        "print the configuration file (leat.yaml) of what the app's registry declares",
		HideHelp:     true,
		OnUsageError: onUsageError,
		Flags:        []cli.Flag{helpFlag()},
		Subcommands: []*cli.Command{{
			Name:  "export",
			Usage: "print the leat.yaml describing the streams and task queues the app's registry holds",
			Description: "The file declares each stream and queue as the programs that declared them (or a file\n" +
				"applied before) recorded it, every setting written out: leat apply -f on it changes\n" +
				"nothing. Handlers, cron schedules and the settings only workers hold are not in the\n" +
				"registry, so not in the file; a stream keyed by a Go function is named in a comment.",
			Flags:        []cli.Flag{helpFlag()},
			HideHelp:     true,
			OnUsageError: onUsageError,
			Action: func(c *cli.Context) error {
				if err := wantArgs(c); err != nil {
					return err
				}
				a, err := openApp(c, setup)
				if err != nil {
					return err
				}
				defer a.Close()
				b, err := leatconfig.Export(c.Context, a)
				if err != nil {
					return err
				}
				_, err = c.App.Writer.Write(b)
				return err
			},
		}},
		Action: func(c *cli.Context) error {
			return usageErrorf("config needs a subcommand: export")
		},
	}
}

// dirFile is the configuration file the commands read the app's name from
// when neither --app nor LEAT_APP gives it.
const dirFile = "leat.yaml"

// appOfDir returns the app named by the leat.yaml of the current
// directory, for commands given no --app; an error when there is none.
func appOfDir() (string, error) {
	if _, err := os.Stat(dirFile); errors.Is(err, fs.ErrNotExist) {
		return "", usageErrorf("no app name: pass --app, set LEAT_APP, or run where a %s names it (app: NAME)", dirFile)
	}
	f, err := leatconfig.Load(dirFile)
	var errs leatconfig.Errors
	if errors.As(err, &errs) {
		return "", usageError{fileErrors{errs, "read for the app's name, as --app is not given"}}
	}
	if err != nil {
		return "", usageError{err}
	}
	if f.App == "" {
		return "", usageErrorf("no app name: pass --app, set LEAT_APP, or name it in %s (app: NAME)", dirFile)
	}
	return f.App, nil
}
