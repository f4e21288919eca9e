// Package deploy puts a deployment's code on a worker's disk and prepares
// it: it resolves a source (a git repository and ref, or a local directory)
// to a revision, fetches each revision into a directory of its own, and
// runs the deployment's setup steps there once per revision.
//
// # Layout
//
// Under a worker's deploy directory, each deployment has a directory of its
// own, DEPLOYMENT, holding:
//
//   - REV: the source at revision REV (a git commit, or the SHA-256 of a
//     local directory's files), written to a temporary directory and
//     renamed into place, so a REV directory is always whole;
//   - REV.setup: the marker of a setup that succeeded, holding the digest of
//     the steps and environment it ran with: a revision whose marker matches
//     is not set up again; a failed setup writes no marker and runs again
//     next time;
//   - .lock: held (flock) while a revision is fetched or set up, so workers
//     sharing the directory never prepare the same revision at once.
//
// Commands run without the worker's LEAT_ variables, which hold its
// credentials; git never prompts and speaks only the file, git, ssh, http
// and https transports.
package deploy
