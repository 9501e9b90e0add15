package cluster

import (
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Timeout bounds the up-front checks, so that an unreachable cluster is an
// error in seconds rather than a hang.
const Timeout = 15 * time.Second

// DefaultNamespace is the namespace cachebench seeds and reads when neither
// -n nor the kubeconfig's context names one: on the local server, and on a
// cluster whose context has no namespace (kind's and minikube's have none),
// so that `cachebench seed`, `run` and `doctor` find each other's objects.
const DefaultNamespace = "cachebench"

// Source is where a command's cluster comes from, as kubectl finds it: a
// kubeconfig found by the loading rules (an explicit file, else $KUBECONFIG,
// else ~/.kube/config) and kubectl's overrides (--context, --user, --server,
// -n and the rest).
type Source struct {
	Rules     *clientcmd.ClientConfigLoadingRules
	Overrides *clientcmd.ConfigOverrides
}

// NewSource returns the Source of kubectl's defaults with no flags set.
func NewSource() Source {
	return Source{Rules: clientcmd.NewDefaultClientConfigLoadingRules(), Overrides: &clientcmd.ConfigOverrides{}}
}

// Target is the cluster a command works on: its client configuration and,
// for messages that say what to do, where it came from.
type Target struct {
	Config *rest.Config
	// Context and User name the kubeconfig's context and user; Kubeconfig is
	// the file (or the files of $KUBECONFIG) they came from.
	Context, User, Kubeconfig string
}

// Load loads a kubeconfig with the named context (the current one when
// context is empty): see Source.Load. An empty path loads what kubectl would:
// $KUBECONFIG, then ~/.kube/config.
func Load(path, context string) (*rest.Config, error) {
	s := NewSource()
	s.Rules.ExplicitPath = path
	s.Overrides.CurrentContext = context
	t, err := s.Load()
	return t.Config, err
}

// Load resolves the source into a Target, with client-side rate limits
// raised to 500 QPS: cachebench reads and writes in bulk, and client-go's
// default of 5 QPS would make that take hours. Its errors name the kubeconfig
// and the context, and say what to do when there is no kubeconfig at all.
func (s Source) Load() (Target, error) {
	cc := s.clientConfig()
	t := Target{Kubeconfig: s.files()}
	if raw, err := cc.RawConfig(); err == nil {
		t.Context = raw.CurrentContext
		if s.Overrides.CurrentContext != "" {
			t.Context = s.Overrides.CurrentContext
		}
		if c := raw.Contexts[t.Context]; c != nil {
			t.User = c.AuthInfo
		}
		if s.Overrides.Context.AuthInfo != "" {
			t.User = s.Overrides.Context.AuthInfo
		}
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return t, s.loadError(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	t.Config = cfg
	return t, nil
}

// Namespace is the namespace a command works in: -n when given, else the
// context's namespace, else DefaultNamespace.
func (s Source) Namespace() (string, error) {
	if ns := s.Overrides.Context.Namespace; ns != "" {
		return ns, nil
	}
	raw, err := s.clientConfig().RawConfig()
	if err != nil {
		return "", s.loadError(err)
	}
	name := raw.CurrentContext
	if s.Overrides.CurrentContext != "" {
		name = s.Overrides.CurrentContext
	}
	if c := raw.Contexts[name]; c != nil && c.Namespace != "" {
		return c.Namespace, nil
	}
	return DefaultNamespace, nil
}

func (s Source) clientConfig() clientcmd.ClientConfig {
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(s.Rules, s.Overrides)
}

// files names the kubeconfig the rules load, for messages.
func (s Source) files() string {
	if s.Rules.ExplicitPath != "" {
		return s.Rules.ExplicitPath
	}
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		return "$" + clientcmd.RecommendedConfigPathEnvVar + " (" + env + ")"
	}
	return clientcmd.RecommendedHomeFile
}

func (s Source) loadError(err error) error {
	if clientcmd.IsEmptyConfig(err) || errors.Is(err, os.ErrNotExist) && s.Rules.ExplicitPath == "" {
		return fmt.Errorf("no kubeconfig: give --kubeconfig, set $KUBECONFIG or write %s (for a local server, 'cachebench apiserver' prints one)", clientcmd.RecommendedHomeFile)
	}
	if s.Overrides.CurrentContext != "" {
		return fmt.Errorf("load kubeconfig %s, context %s: %w", s.files(), s.Overrides.CurrentContext, err)
	}
	return fmt.Errorf("load kubeconfig %s: %w", s.files(), err)
}

// who names the identity for messages: "user U (context C)".
func (t Target) who() string {
	switch {
	case t.User != "" && t.Context != "":
		return fmt.Sprintf("user %s (context %s)", t.User, t.Context)
	case t.Context != "":
		return "context " + t.Context
	}
	return "the kubeconfig's user"
}
