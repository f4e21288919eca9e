package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/task/wasm"
	"github.com/urfave/cli/v2"
)

// Names of the flags of "leat wasm".
const (
	flagContract    = "contract"
	flagReusable    = "reusable"
	flagMaxSize     = "max-size"
	flagMemoryPages = "memory-pages"
	flagOutput      = "o"
	flagCacheDir    = "cache-dir"
)

func wasmCommand(setup Setup) *cli.Command {
	sub := func(name, usage, args string, flags []cli.Flag, action func(*cli.Context, *wasm.Registry) error) *cli.Command {
		return &cli.Command{
			Name: name, Usage: usage, ArgsUsage: args, Flags: append(flags, helpFlag()),
			HideHelp: true, OnUsageError: onUsageError,
			Action: func(c *cli.Context) error {
				a, err := openApp(c, setup)
				if err != nil {
					return err
				}
				defer a.Close()
				return action(c, registry(c, a))
			},
		}
	}
	jsonFlag := func() cli.Flag { return &cli.BoolFlag{Name: flagJSON, Usage: "print JSON instead of a table"} }
	return &cli.Command{
		Name:  "wasm",
		Usage: "store, list, show and remove the WebAssembly task handlers of the app's registry, or build one from Go",
		Description: "WebAssembly handlers run the tasks of a queue in a sandbox on any worker\n" +
			"(leat worker --queue QUEUE --wasm NAME); the modules live in the app's Redis, by\n" +
			"name and version. See docs/wasm.md.",
		HideHelp: true, OnUsageError: onUsageError,
		Flags: []cli.Flag{helpFlag()},
		Subcommands: []*cli.Command{
			sub("put", "store a module as the new version of NAME, after checking that it compiles and follows its contract", "NAME FILE",
				[]cli.Flag{
					&cli.StringFlag{Name: flagContract, Usage: "the module's contract: `reactor` or lines", DefaultText: "detected from its exports"},
					&cli.BoolFlag{Name: flagReusable, Usage: "an instance may run task after task (workers with --wasm-pool keep them)"},
					&cli.IntFlag{Name: flagMaxSize, Usage: "refuse a module over `BYTES`", Value: wasm.DefaultMaxSize},
					&cli.UintFlag{Name: flagMemoryPages, Usage: "refuse a module that needs more than `PAGES` of 64 KiB at start (the workers' --wasm-memory)", Value: wasm.DefaultMemoryPages},
					cacheDirFlag(),
				},
				func(c *cli.Context, reg *wasm.Registry) error {
					if err := wantArgs(c, "NAME", "FILE"); err != nil {
						return err
					}
					o := wasm.PutOptions{Reusable: c.Bool(flagReusable), MaxSize: c.Int(flagMaxSize), MemoryPages: uint32(c.Uint(flagMemoryPages))}
					if s := c.String(flagContract); s != "" {
						ct, err := wasm.ParseContract(s)
						if err != nil {
							return usageErrorf("--%s: %w", flagContract, err)
						}
						o.Contract = ct
					}
					if o.MaxSize <= 0 {
						return usageErrorf("--%s %d: want a positive size in bytes", flagMaxSize, o.MaxSize)
					}
					module, err := readModule(c.Args().Get(1), o.MaxSize)
					if err != nil {
						return err
					}
					v, err := reg.Put(c.Context, c.Args().Get(0), module, o)
					if err != nil {
						return err
					}
					_, err = fmt.Fprintf(c.App.Writer, "%s version %d: %s module of %d bytes, sha256 %s\n", v.Name, v.Version, v.Contract, v.Size, v.Hash)
					return err
				}),
			sub("list", "print the current version of every module", "", []cli.Flag{jsonFlag()},
				func(c *cli.Context, reg *wasm.Registry) error {
					if err := wantArgs(c); err != nil {
						return err
					}
					vs, err := reg.List(c.Context)
					if err != nil {
						return err
					}
					return printVersions(c, vs)
				}),
			sub("show", "print every version of module NAME", "NAME", []cli.Flag{jsonFlag()},
				func(c *cli.Context, reg *wasm.Registry) error {
					if err := wantArgs(c, "NAME"); err != nil {
						return err
					}
					vs, err := reg.Versions(c.Context, c.Args().Get(0))
					if err != nil {
						return err
					}
					return printVersions(c, vs)
				}),
			sub("rm", "remove module NAME and all its versions (workers fail its next tasks)", "NAME", nil,
				func(c *cli.Context, reg *wasm.Registry) error {
					if err := wantArgs(c, "NAME"); err != nil {
						return err
					}
					n, err := reg.Remove(c.Context, c.Args().Get(0))
					if err != nil {
						return err
					}
					_, err = fmt.Fprintf(c.App.Writer, "removed %s: %d %s\n", c.Args().Get(0), n, plural(n, "version"))
					return err
				}),
			wasmBenchCommand(),
			{
				Name: "build", Usage: "build a module from the Go main package in DIR with the standard toolchain (GOOS=wasip1 GOARCH=wasm go build)",
				ArgsUsage: "DIR", HideHelp: true, OnUsageError: onUsageError,
				Description: "A package with a //go:wasmexport execute function is built as a reactor\n" +
					"(-buildmode=c-shared), any other as a lines module (a WASI command). Needs no Redis.",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: flagOutput, Usage: "write the module to `FILE`", Required: true},
					&cli.StringFlag{Name: flagContract, Usage: "build for `CONTRACT`: reactor or lines", DefaultText: "reactor when the package exports execute"},
					helpFlag(),
				},
				Action: func(c *cli.Context) error {
					if err := wantArgs(c, "DIR"); err != nil {
						return err
					}
					var o wasm.BuildOptions
					if s := c.String(flagContract); s != "" {
						ct, err := wasm.ParseContract(s)
						if err != nil {
							return usageErrorf("--%s: %w", flagContract, err)
						}
						o.Contract = ct
					}
					ct, err := wasm.Build(c.Context, c.Args().Get(0), c.String(flagOutput), o)
					if err != nil {
						return err
					}
					_, err = fmt.Fprintf(c.App.Writer, "built %s (%s)\n", c.String(flagOutput), ct)
					return err
				},
			},
		},
	}
}

func cacheDirFlag() cli.Flag {
	return &cli.StringFlag{
		Name: flagCacheDir, Usage: "keep compiled modules in `DIR` (- for none)",
		EnvVars: []string{envName("wasm-" + flagCacheDir)}, DefaultText: wasm.DefaultCacheDir(),
	}
}

// registry returns the app's module registry, caching compiled modules
// where --cache-dir says.
func registry(c *cli.Context, a *app.App) *wasm.Registry {
	dir := c.String(flagCacheDir)
	if dir == "" {
		dir = wasm.DefaultCacheDir()
	}
	return wasm.NewRegistry(a, dir)
}

// readModule reads a module's file ("-": stdin), refusing one over max
// bytes without reading it all.
func readModule(path string, max int) ([]byte, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > max {
		return nil, fmt.Errorf("%w: %s is over the limit of %d bytes (--%s)", wasm.ErrTooLarge, path, max, flagMaxSize)
	}
	return b, nil
}

func printVersions(c *cli.Context, vs []wasm.Version) error {
	if c.Bool(flagJSON) {
		enc := json.NewEncoder(c.App.Writer)
		for _, v := range vs {
			if err := enc.Encode(v); err != nil {
				return err
			}
		}
		return nil
	}
	w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tVERSION\tCONTRACT\tREUSABLE\tSIZE\tSHA256\tPUT")
	for _, v := range vs {
		fmt.Fprintf(w, "%s\t%d\t%s\t%t\t%d\t%s\t%s\n", v.Name, v.Version, v.Contract, v.Reusable, v.Size, v.Hash[:min(12, len(v.Hash))], v.PutAt.Format(time.RFC3339))
	}
	return w.Flush()
}
