package cmd

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// The completion scripts ask the program itself for the words that may come
// next: urfave/cli answers a command line ending in --generate-bash-completion
// with the subcommands or flags there (App.EnableBashCompletion), so the
// scripts never go stale. PROG stands for the program's name.
const (
	bashCompletion = `# bash completion for PROG: source <(PROG completion bash)
_PROG_complete() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  local -a line=("${COMP_WORDS[@]:0:COMP_CWORD}")
  if [[ $cur == -* ]]; then line+=("$cur"); fi
  local IFS=$'\n'
  COMPREPLY=($(compgen -W "$("${line[@]}" --generate-bash-completion 2>/dev/null)" -- "$cur"))
}
complete -o bashdefault -o default -F _PROG_complete PROG
`
	zshCompletion = `#compdef PROG
# zsh completion for PROG: source <(PROG completion zsh)
_PROG_complete() {
  local -a line opts
  line=("${(@)words[1,CURRENT-1]}")
  if [[ ${words[CURRENT]} == -* ]]; then line+=("${words[CURRENT]}"); fi
  opts=("${(@f)$("${line[@]}" --generate-bash-completion 2>/dev/null)}")
  if [[ -n ${opts[1]} ]]; then compadd -a opts; else _files; fi
}
compdef _PROG_complete PROG
`
)

// completionCommand prints a shell's completion script.
func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script of bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: "Load it in the running shell or install it:\n\n" +
			"   source <(leat completion bash)     # bash; or save it in /etc/bash_completion.d/leat\n" +
			"   source <(leat completion zsh)      # zsh; or save it as _leat in a directory of $fpath\n" +
			"   leat completion fish > ~/.config/fish/completions/leat.fish",
		Flags:        []cli.Flag{helpFlag()},
		HideHelp:     true, // see helpFlag
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, "SHELL"); err != nil {
				return err
			}
			script, err := completionScript(c.App, c.Args().First())
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(c.App.Writer, script)
			return err
		},
	}
}

// completionScript returns the completion script of shell for a.
func completionScript(a *cli.App, shell string) (string, error) {
	switch shell {
	case "bash":
		return strings.ReplaceAll(bashCompletion, "PROG", a.Name), nil
	case "zsh":
		return strings.ReplaceAll(zshCompletion, "PROG", a.Name), nil
	case "fish":
		return a.ToFishCompletion()
	}
	return "", usageErrorf("completion: unknown shell %q: want bash, zsh or fish", shell)
}
