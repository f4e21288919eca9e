package cmd

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed returns args (starting with the program name) with each
// command's own flags that follow its positional arguments moved before
// them, so that "leat tasks list greet --limit 3" means "leat tasks list
// --limit 3 greet": urfave/cli, like Go's flag package, stops at the first
// argument. Only the flags the command defines move (with their value when
// they take one); anything else stays an argument, as does everything after
// "--". Global flags after the command are left in place, for the error
// that says to put them before it.
func interspersed(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	i := 1
	for i < len(args) && isFlagToken(args[i]) {
		f := lookupFlag(app.Flags, args[i])
		i++
		if f != nil && takesValue(f) && !strings.Contains(args[i-1], "=") {
			i++
		}
	}
	if i >= len(args) {
		return args
	}
	cmd := app.Command(args[i])
	if cmd == nil {
		return args
	}
	i++
	for i < len(args) && len(cmd.Subcommands) > 0 {
		sub := cmd.Command(args[i])
		if sub == nil {
			break
		}
		cmd = sub
		i++
	}
	if len(cmd.Subcommands) > 0 {
		return args
	}
	var flags, positional []string
	for j := i; j < len(args); j++ {
		a := args[j]
		if a == "--" {
			positional = append(positional, args[j:]...)
			break
		}
		f := lookupFlag(cmd.Flags, a)
		if !isFlagToken(a) || f == nil {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		if takesValue(f) && !strings.Contains(a, "=") && j+1 < len(args) {
			j++
			flags = append(flags, args[j])
		}
	}
	out := append([]string{}, args[:i]...)
	out = append(out, flags...)
	return append(out, positional...)
}

func isFlagToken(a string) bool { return len(a) > 1 && a[0] == '-' && a != "--" }

// lookupFlag returns the flag among flags that the token a (-n, --name or
// --name=value) names, or nil.
func lookupFlag(flags []cli.Flag, a string) cli.Flag {
	name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
	if name == "" {
		return nil
	}
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

func takesValue(f cli.Flag) bool {
	if v, ok := f.(cli.DocGenerationFlag); ok {
		return v.TakesValue()
	}
	return false
}
