// Package cluster connects cachebench's commands to a cluster: it loads a
// kubeconfig (a context of it, with client-side rate limits raised for bulk
// reads) and checks, in seconds, that the cluster answers.
//
// The guide that uses it: docs/troubleshooting.md, where `cachebench doctor` reads a cluster.
//
//	cfg, err := cluster.Load(path, "")             // the current context
//	if err := cluster.Reachable(ctx, cfg); err != nil {
//		return err                                    // "cannot reach the cluster at https://...: ..."
//	}
package cluster
