package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/leatdev/leat/internal/deploy"
	"github.com/leatdev/leat/internal/rdb"
	"go.yaml.in/yaml/v3"
)

// Defaults and bounds of a pools file.
const (
	DefaultHeartbeat    = 5 * time.Second
	MinHeartbeat        = 500 * time.Millisecond
	MaxHeartbeat        = 5 * time.Minute
	DefaultPoll         = 30 * time.Second
	MinPoll             = time.Second
	DefaultSetupTimeout = 15 * time.Minute
	// MinTokenLength is the shortest pool token accepted.
	MinTokenLength = 16
)

// File is a pools file: the worker pools of one app and the deployments
// they run. Its sections may later join the app's configuration file.
type File struct {
	Pools       map[string]*Pool       `yaml:"pools" json:"pools"`
	Deployments map[string]*Deployment `yaml:"deployments" json:"deployments"`
}

// Pool is a worker pool: the workers that present its token run its queues
// with its deployment.
type Pool struct {
	// TokenEnv names the environment variable holding the pool's token;
	// TokenFile names a file holding it. Exactly one is given: a token is
	// never written in the pools file.
	TokenEnv  string `yaml:"token_env" json:"-"`
	TokenFile string `yaml:"token_file" json:"-"`
	// Queues are the task queues the pool's workers run (at least one).
	Queues []string `yaml:"queues" json:"queues"`
	// Deployment names the deployment (in Deployments) they run.
	Deployment string `yaml:"deployment" json:"deployment"`
	// Concurrency, when positive, is how many tasks of each queue a worker
	// runs at once, over the queue's recorded concurrency.
	Concurrency int `yaml:"concurrency" json:"concurrency,omitempty"`
	// Heartbeat is how often workers report (default 5s); a worker silent
	// for three heartbeats is gone from the listings.
	Heartbeat time.Duration `yaml:"heartbeat" json:"heartbeat"`
	// Redis says how the pool's workers reach Redis.
	Redis PoolRedis `yaml:"redis" json:"-"`

	token    string
	redisURL string
}

// PoolRedis is how a pool's workers reach Redis: by default as a Redis
// user the control plane creates for the pool (User, granted what a worker
// needs and no more), at the control plane's Redis address or Address;
// with URLEnv or URLFile, by the URL the operator gives there, as is.
type PoolRedis struct {
	User    string `yaml:"user"`
	Address string `yaml:"address"`
	URLEnv  string `yaml:"url_env"`
	URLFile string `yaml:"url_file"`
}

// Deployment is code to run: a source, setup steps run once per revision,
// and the command that starts a handler process.
type Deployment struct {
	// Git (a repository: a URL or a path) with Ref (a branch, tag or
	// commit; default HEAD), or Path (an absolute directory).
	Git  string `yaml:"git" json:"git,omitempty"`
	Ref  string `yaml:"ref" json:"ref,omitempty"`
	Path string `yaml:"path" json:"path,omitempty"`
	// Poll is how often the control plane resolves the source again
	// (default 30s, at least 1s): a new revision is rolled out.
	Poll time.Duration `yaml:"poll" json:"poll"`
	// Setup are shell command lines run in order in the revision's
	// directory, once per revision (python3 -m venv .venv, say).
	Setup []string `yaml:"setup" json:"setup,omitempty"`
	// SetupTimeout bounds the whole setup (default 15m).
	SetupTimeout time.Duration `yaml:"setup_timeout" json:"setup_timeout"`
	// Start is the shell command line of a handler process, run in the
	// revision's directory; it speaks leat's subprocess protocol.
	Start string `yaml:"start" json:"start"`
	// Env are variables set for the setup and the handler processes.
	Env map[string]string `yaml:"env" json:"env,omitempty"`
}

// Source is where a deployment's files come from: a git repository at a ref,
// or a directory on the control plane's machine.
type Source struct {
	Git  string `json:"git,omitempty"`
	Ref  string `json:"ref,omitempty"`
	Path string `json:"path,omitempty"`
}

// Source returns the deployment's source.
func (d *Deployment) Source() Source {
	return Source{Git: d.Git, Ref: d.Ref, Path: d.Path}
}

// Load reads and checks the pools file at path, then reads the pools'
// tokens and Redis URLs with getenv (os.Getenv when nil) and from their
// files. Every error names its line; nothing is used when any is found.
func Load(path string, getenv func(string) string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(b)
	if err != nil {
		return nil, prefixLines(path, err)
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	if err := f.readSecrets(getenv); err != nil {
		return nil, prefixLines(path, err)
	}
	return f, nil
}

// prefixLines puts "path:" before each line of err's message.
func prefixLines(path string, err error) error {
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = path + ": " + l
	}
	return errors.New(strings.Join(lines, "\n"))
}

// Parse checks a pools file's text: YAML with known fields only, each of
// its type (a string is quoted or plain text, never a number or a
// boolean taken as one), then the values. It reads no token.
func Parse(b []byte) (*File, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, err
	}
	if len(root.Content) == 0 {
		return nil, errors.New("line 1: the file is empty: want pools and deployments")
	}
	if errs := checkTags(root.Content[0], reflect.TypeOf(File{}), ""); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var f File
	if err := dec.Decode(&f); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return nil, errors.New(strings.Join(te.Errors, "\n"))
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		return nil, errors.New("the file holds more than one YAML document")
	}
	if errs := f.check(lines{root.Content[0]}); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &f, nil
}

// checkTags refuses scalars whose YAML type is not the Go field's: a
// number or boolean where a string goes (yaml.v3 would take its text).
func checkTags(n *yaml.Node, t reflect.Type, path string) []error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var errs []error
	switch t.Kind() {
	case reflect.String:
		if n.Kind == yaml.ScalarNode && n.ShortTag() != "!!str" {
			errs = append(errs, fmt.Errorf("line %d: %s: want a string, got %s %q (quote it)", n.Line, path, strings.TrimPrefix(n.ShortTag(), "!!"), n.Value))
		}
	case reflect.Slice:
		if n.Kind == yaml.SequenceNode {
			for i, c := range n.Content {
				errs = append(errs, checkTags(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	case reflect.Map:
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				errs = append(errs, checkTags(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value))...)
			}
		}
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			break
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			name := n.Content[i].Value
			for j := 0; j < t.NumField(); j++ {
				if tag, _, _ := strings.Cut(t.Field(j).Tag.Get("yaml"), ","); tag == name {
					errs = append(errs, checkTags(n.Content[i+1], t.Field(j).Type, join(path, name))...)
				}
			}
		}
	}
	return errs
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// lines finds the line of a value in the file's tree.
type lines struct{ root *yaml.Node }

// of returns the line of the node at path (mapping keys), or of its
// deepest ancestor found.
func (l lines) of(path ...string) int {
	n := l.root
	line := n.Line
	for _, p := range path {
		var next *yaml.Node
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					line, next = n.Content[i].Line, n.Content[i+1]
				}
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}

// errAt is an error at the line of path.
func (l lines) errAt(path []string, format string, args ...any) error {
	return fmt.Errorf("line %d: %s: %s", l.of(path...), strings.Join(path, "."), fmt.Sprintf(format, args...))
}

// validName reports whether s can name a pool or deployment: a leat name
// that is not "." or "..".
func validName(s string) bool { return rdb.ValidName(s) && s != "." && s != ".." }

// check returns every error of f's values.
func (f *File) check(l lines) []error {
	var errs []error
	if len(f.Pools) == 0 {
		errs = append(errs, l.errAt([]string{"pools"}, "no pool declared"))
	}
	for _, name := range sortedKeys(f.Pools) {
		p := f.Pools[name]
		at := func(field ...string) []string { return append([]string{"pools", name}, field...) }
		if p == nil {
			errs = append(errs, l.errAt(at(), "empty pool"))
			continue
		}
		if !validName(name) {
			errs = append(errs, l.errAt(at(), "invalid pool name: use 1 to 128 letters, digits, '_', '.' or '-'"))
		}
		if (p.TokenEnv == "") == (p.TokenFile == "") {
			errs = append(errs, l.errAt(at(), "give exactly one of token_env (an environment variable) and token_file (a file) holding the pool's token"))
		}
		if len(p.Queues) == 0 {
			errs = append(errs, l.errAt(at("queues"), "no queue: name the task queues the pool's workers run"))
		}
		seen := map[string]bool{}
		for _, q := range p.Queues {
			if err := rdb.CheckName("queue", q); err != nil {
				errs = append(errs, l.errAt(at("queues"), "%v", err))
			} else if seen[q] {
				errs = append(errs, l.errAt(at("queues"), "queue %q named twice", q))
			}
			seen[q] = true
		}
		if p.Deployment == "" {
			errs = append(errs, l.errAt(at("deployment"), "no deployment: name one of the deployments section"))
		} else if f.Deployments[p.Deployment] == nil {
			errs = append(errs, l.errAt(at("deployment"), "deployment %q is not declared in the deployments section", p.Deployment))
		}
		if p.Concurrency < 0 || p.Concurrency > 1000 {
			errs = append(errs, l.errAt(at("concurrency"), "%d: want 1 to 1000 (or leave it out: the queue's)", p.Concurrency))
		}
		switch {
		case p.Heartbeat == 0:
			p.Heartbeat = DefaultHeartbeat
		case p.Heartbeat < MinHeartbeat || p.Heartbeat > MaxHeartbeat:
			errs = append(errs, l.errAt(at("heartbeat"), "%s: want %s to %s", p.Heartbeat, MinHeartbeat, MaxHeartbeat))
		}
		r := p.Redis
		switch {
		case r.URLEnv != "" && r.URLFile != "":
			errs = append(errs, l.errAt(at("redis"), "give url_env or url_file, not both"))
		case (r.URLEnv != "" || r.URLFile != "") && (r.User != "" || r.Address != ""):
			errs = append(errs, l.errAt(at("redis"), "user and address go with a Redis user leat creates, not with url_env or url_file"))
		}
		if r.User != "" && (strings.ContainsAny(r.User, " \t\r\n\x00") || len(r.User) > 128) {
			errs = append(errs, l.errAt(at("redis", "user"), "%q: want a Redis user name without spaces", r.User))
		}
		if r.Address != "" && (strings.ContainsAny(r.Address, "/@ ") || !strings.Contains(r.Address, ":")) {
			errs = append(errs, l.errAt(at("redis", "address"), "%q: want HOST:PORT", r.Address))
		}
	}
	for _, name := range sortedKeys(f.Deployments) {
		d := f.Deployments[name]
		at := func(field ...string) []string { return append([]string{"deployments", name}, field...) }
		if d == nil {
			errs = append(errs, l.errAt(at(), "empty deployment"))
			continue
		}
		if !validName(name) {
			errs = append(errs, l.errAt(at(), "invalid deployment name: use 1 to 128 letters, digits, '_', '.' or '-'"))
		}
		if err := deploy.Source(d.Source()).Check(); err != nil {
			errs = append(errs, l.errAt(at(), "source: %v", err))
		}
		if strings.TrimSpace(d.Start) == "" {
			errs = append(errs, l.errAt(at("start"), "no start command: the command line of a handler process"))
		}
		for i, s := range d.Setup {
			if strings.TrimSpace(s) == "" || strings.ContainsRune(s, 0) {
				errs = append(errs, l.errAt(at("setup"), "step %d is empty", i+1))
			}
		}
		switch {
		case d.Poll == 0:
			d.Poll = DefaultPoll
		case d.Poll < MinPoll:
			errs = append(errs, l.errAt(at("poll"), "%s: want at least %s", d.Poll, MinPoll))
		}
		switch {
		case d.SetupTimeout == 0:
			d.SetupTimeout = DefaultSetupTimeout
		case d.SetupTimeout < 0:
			errs = append(errs, l.errAt(at("setup_timeout"), "%s must be positive", d.SetupTimeout))
		}
		for _, k := range sortedKeys(d.Env) {
			switch {
			case k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(d.Env[k], 0):
				errs = append(errs, l.errAt(at("env", k), "invalid variable"))
			case strings.HasPrefix(k, "LEAT_"):
				errs = append(errs, l.errAt(at("env", k), "LEAT_ variables are leat's own (the worker sets LEAT_QUEUE and LEAT_REVISION)"))
			}
		}
	}
	return errs
}

// readSecrets reads the pools' tokens and Redis URLs.
func (f *File) readSecrets(getenv func(string) string) error {
	var errs []error
	owner := map[string]string{}
	for _, name := range sortedKeys(f.Pools) {
		p := f.Pools[name]
		tok, err := secret(p.TokenEnv, p.TokenFile, getenv)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("pool %s: token: %w", name, err))
		case len(tok) < MinTokenLength:
			errs = append(errs, fmt.Errorf("pool %s: the token is %d characters: use at least %d random ones", name, len(tok), MinTokenLength))
		case owner[tok] != "":
			errs = append(errs, fmt.Errorf("pool %s: same token as pool %s: give each pool its own", name, owner[tok]))
		default:
			owner[tok] = name
			p.token = tok
		}
		if p.Redis.URLEnv == "" && p.Redis.URLFile == "" {
			continue
		}
		u, err := secret(p.Redis.URLEnv, p.Redis.URLFile, getenv)
		if err == nil {
			err = checkRedisURL(u)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("pool %s: redis URL: %w", name, err))
		}
		p.redisURL = u
	}
	return errors.Join(errs...)
}

// secret reads a value from the environment variable env or the file.
func secret(env, file string, getenv func(string) string) (string, error) {
	if env != "" {
		v := getenv(env)
		if v == "" {
			return "", fmt.Errorf("environment variable %s is not set", env)
		}
		return v, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	v := strings.TrimRight(string(b), "\r\n")
	if v == "" {
		return "", fmt.Errorf("file %s is empty", file)
	}
	return v, nil
}

// checkRedisURL refuses what is not a Redis URL.
func checkRedisURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("not a URL") // the URL may hold a password: not repeated
	}
	switch u.Scheme {
	case "redis", "rediss", "unix":
		return nil
	}
	return fmt.Errorf("scheme %q: want redis://, rediss:// or unix://", u.Scheme)
}

// Token returns the pool's token (read by Load).
func (p *Pool) Token() string { return p.token }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
