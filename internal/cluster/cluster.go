package cluster

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Timeout bounds the up-front checks, so that an unreachable cluster is an
// error in seconds rather than a hang.
const Timeout = 15 * time.Second

// Load loads a kubeconfig with the named context (the current one when
// context is empty), with client-side rate limits raised to 500 QPS:
// cachebench reads and writes in bulk, and client-go's default of 5 QPS would
// make that take hours. An empty path loads what kubectl would: $KUBECONFIG,
// then ~/.kube/config.
func Load(path, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules = &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		name := path
		if name == "" {
			name = "(default: $KUBECONFIG or ~/.kube/config)"
		}
		if context != "" {
			return nil, fmt.Errorf("load kubeconfig %s, context %s: %w", name, context, err)
		}
		return nil, fmt.Errorf("load kubeconfig %s: %w", name, err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	return cfg, nil
}

// Reachable asks the cluster for its version, within Timeout.
func Reachable(ctx context.Context, cfg *rest.Config) error {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = Timeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := dc.ServerVersionWithContext(ctx); err != nil {
		return fmt.Errorf("cannot reach the cluster at %s: %w", cfg.Host, err)
	}
	return nil
}
