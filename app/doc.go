// Package app holds the App: a named set of streams and processors that
// share one Redis connection and one key space.
//
//	a, err := app.New(app.Config{Name: "shop", RedisURL: "redis://127.0.0.1:6379"})
//	if err != nil { ... }
//	defer a.Close()
//	orders, err := stream.Declare[Order](a, "orders", stream.KeyField("customer"))
//
// [Config] documents every setting and its default; the zero value of a field
// means its default, and [New] validates the whole configuration, returning
// one error that names every problem. An App accepts a caller-owned
// redis.UniversalClient (standalone, Sentinel or Cluster) and never closes a
// client it did not create.
package app
