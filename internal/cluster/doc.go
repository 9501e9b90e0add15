// Package cluster connects cachebench's commands to a cluster the way kubectl
// does: a kubeconfig found by client-go's loading rules (an explicit file,
// else $KUBECONFIG, else ~/.kube/config) with kubectl's overrides (--context,
// -n, --user, ...), client-side rate limits raised for bulk reads, and one
// namespace rule for every command (-n, else the context's, else
// DefaultNamespace). Before a command does anything, Target.Check makes sure,
// in seconds, that the cluster answers, accepts the credentials, and grants
// the permissions the command needs, and says what to do when it does not.
//
// The guide that uses it: docs/troubleshooting.md, where `cachebench doctor` reads a cluster.
//
//	src := cluster.NewSource()              // kubectl's defaults; cachebench binds its flags to src
//	t, err := src.Load()
//	if err != nil {
//		return err
//	}
//	err = t.Check(ctx, cluster.Allow("", "pods", "shop", "list", "watch")...)
//	// "cannot reach the cluster at https://...", "unauthorized: ...",
//	// "forbidden: alice may not list pods in namespace shop, ...: ask for a Role ..."
package cluster
