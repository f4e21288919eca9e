package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/stream"
	"github.com/urfave/cli/v2"
)

// withStream opens the app, resolves the stream called name with r and runs
// fn on it; the app is closed when fn returns.
func withStream(c *cli.Context, setup Setup, name string, r routing, fn func(*core.Core) error) error {
	if err := rdb.CheckName("stream", name); err != nil {
		return usageError{err}
	}
	a, err := openApp(c, setup)
	if err != nil {
		return err
	}
	defer a.Close()
	st, err := resolveStream(c.Context, a, name, r)
	if err != nil {
		return err
	}
	return fn(st)
}

// resolveStream returns the stream called name, in this order:
//
//   - declared by the app's code (embedded CLI): its declaration routes, and
//     --partitions/--key may only repeat it;
//   - defined in the app's registry in Redis: the definition routes, and
//     --partitions may only repeat it; --key may only repeat its key field,
//     or names the field holding the key of a stream keyed by a Go function;
//     records are checked against the schema the program that declared the
//     stream with a Go type recorded there;
//   - unknown: --key (required) and --partitions (default the app's) define
//     it, and the first send registers it.
//
// A flag that disagrees with the stream's routing is a usage error: a new
// partition count or key would send a key's records to another partition and
// break their order.
func resolveStream(ctx context.Context, a *app.App, name string, r routing) (*core.Core, error) {
	if st, ok := catalogOf(a).Lookup(name); ok {
		where := fmt.Sprintf("declared by app %q", a.Name())
		if err := r.checkPartitions(st.Definition(), where); err != nil {
			return nil, err
		}
		if err := r.checkKey(st.Definition(), where); err != nil {
			return nil, err
		}
		return st, nil
	}
	def, err := core.LoadDefinition(ctx, a.Client(), appKeys(a).Registry(), name)
	switch {
	case errors.Is(err, core.ErrUnknownStream):
		d := catalogOf(a).Defaults()
		if r.keyField == "" {
			return nil, usageErrorf("unknown stream %q: it is not in the registry of app %q; "+
				"pass --key FIELD (and --partitions N, default %d) to define it", name, a.Name(), d.Partitions)
		}
		def = core.Definition{
			Name:       name,
			Partitions: cmp.Or(r.partitions, d.Partitions),
			KeyField:   r.keyField,
			Size:       d.Size,
			Codec:      stream.MsgPack.Name(),
		}
	case err != nil:
		return nil, fmt.Errorf("load stream %q from the registry: %w", name, err)
	default:
		where := fmt.Sprintf("registered in app %q", a.Name())
		if err := r.checkPartitions(def, where); err != nil {
			return nil, err
		}
		if def.KeyField == "" {
			if r.keyField == "" {
				return nil, usageErrorf("stream %q is keyed by a Go function in app %q, so the registry names no key field: "+
					"pass --key FIELD naming the record field that holds its key", name, a.Name())
			}
			def.KeyField = r.keyField
		} else if err := r.checkKey(def, where); err != nil {
			return nil, err
		}
	}
	st, err := core.Open(catalogOf(a), def)
	if err != nil {
		return nil, fmt.Errorf("open stream %q: %w", name, err)
	}
	if err := st.LoadSchema(ctx); err != nil {
		return nil, err
	}
	return st, nil
}

// checkPartitions fails when --partitions was given and differs from def;
// where says where def comes from.
func (r routing) checkPartitions(def core.Definition, where string) error {
	if r.partitions == 0 || r.partitions == def.Partitions {
		return nil
	}
	return usageErrorf("stream %q is %s with %d partitions, not %d: changing the partition count "+
		"would move keys to other partitions and break their order (use a new stream name)",
		def.Name, where, def.Partitions, r.partitions)
}

// checkKey fails when --key was given and differs from def's key field.
func (r routing) checkKey(def core.Definition, where string) error {
	switch {
	case r.keyField == "" || r.keyField == def.KeyField:
		return nil
	case def.KeyField == "":
		return usageErrorf("stream %q is %s with a Go key function; drop --key %q", def.Name, where, r.keyField)
	}
	return usageErrorf("stream %q is %s with key field %q, not %q: changing the key "+
		"would break per-key order (use a new stream name)", def.Name, where, def.KeyField, r.keyField)
}

// appKeys returns the Redis key space of a.
func appKeys(a *app.App) rdb.KeySpace { return rdb.NewKeySpace(a.Config().KeyPrefix, a.Name()) }

// catalogOf returns the catalog of the streams declared on a.
func catalogOf(a *app.App) *core.Catalog {
	c, _ := core.UnwrapCatalog(a.Catalog())
	return c
}
