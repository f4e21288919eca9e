package topology_test

import (
	"testing"

	"github.com/leatdev/leat/internal/topology"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// leat's own clients speak RESP2 without maintenance notifications, and
// making one leaves the application client's settings as they were.
func TestOwnSettings(t *testing.T) {
	app := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", Protocol: 3, ClientName: "app"})
	defer app.Close()
	once, closeOnce := topology.SendOnce(app, 2)
	defer closeOnce()
	for name, opt := range map[string]*redis.Options{
		"Own":      topology.Own(*app.Options()),
		"SendOnce": once.(*redis.Client).Options(),
	} {
		if opt.Protocol != 2 || opt.MaintNotificationsConfig == nil || opt.MaintNotificationsConfig.Mode != maintnotifications.ModeDisabled {
			t.Errorf("%s: protocol %d, notifications %+v: want RESP2 without notifications", name, opt.Protocol, opt.MaintNotificationsConfig)
		}
		if opt.ClientName != "app" {
			t.Errorf("%s: client name %q, want the application client's", name, opt.ClientName)
		}
	}
	if app.Options().Protocol != 3 {
		t.Errorf("the application client's protocol became %d", app.Options().Protocol)
	}

	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, Protocol: 3})
	defer cluster.Close()
	conce, closeCOnce := topology.SendOnce(cluster, 2)
	defer closeCOnce()
	for name, opt := range map[string]*redis.ClusterOptions{
		"OwnCluster":       topology.OwnCluster(*cluster.Options()),
		"SendOnce cluster": conce.(*redis.ClusterClient).Options(),
	} {
		if opt.Protocol != 2 || opt.MaintNotificationsConfig == nil || opt.MaintNotificationsConfig.Mode != maintnotifications.ModeDisabled {
			t.Errorf("%s: protocol %d, notifications %+v: want RESP2 without notifications", name, opt.Protocol, opt.MaintNotificationsConfig)
		}
	}
	if cluster.Options().Protocol != 3 {
		t.Errorf("the application cluster client's protocol became %d", cluster.Options().Protocol)
	}
}
