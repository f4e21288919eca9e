package topology

import (
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// The clients leat makes for its own commands (the executor's, the lock
// client, the task fetchers') are copies of the application's client
// settings with these changes:
//
//   - no maintenance notifications: the copy would otherwise share, and may
//     update, the application client's notification settings, and leat's
//     commands need none;
//   - RESP2: none of leat's commands needs RESP3, and on RESP3 go-redis
//     peeks at a connection held out of its pool (a fetcher's own
//     connection) before every command, looking for push notifications: a
//     system call and three allocations per command on the idle path.
//
// Every reply leat reads parses the same in both protocols (its raw reply
// readers accept both shapes).

// Own returns opt, a copy of a client's options, with leat's settings.
func Own(opt redis.Options) *redis.Options {
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	opt.Protocol = 2
	return &opt
}

// OwnCluster is Own for cluster clients.
func OwnCluster(opt redis.ClusterOptions) *redis.ClusterOptions {
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	opt.Protocol = 2
	return &opt
}
