package leancache_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/cachetune/cachetune/controllerruntime/leancache"
	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/leanstore"
)

// lines records what a logger wrote, one "prefix args" line per call.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) write(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, prefix+" "+args)
}

// with returns the recorded lines that contain every one of subs.
func (l *lines) with(subs ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
next:
	for _, line := range l.all {
		for _, s := range subs {
			if !strings.Contains(line, s) {
				continue next
			}
		}
		out = append(out, line)
	}
	return out
}

// ctrlLog is controller-runtime's logger in this test binary (TestMain sets it).
var ctrlLog lines

// leanstore's failures go to controller-runtime's logger unless the Cache's
// leanstore options name another: an informer whose lists are forbidden logs
// each failure under the name "leancache", where the operator's own lines
// go; with leanstore.WithLogger, to that logger only.
func TestLogsGoToControllerRuntimesLogger(t *testing.T) {
	leakcheck.Check(t)
	user, err := env.AddUser(envtest.User{Name: "nobody-logs"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mine lines
	for _, tc := range []struct {
		name      string
		extra     []leanstore.Option
		want, not *lines
	}{
		{name: "logdefault", want: &ctrlLog, not: &mine},
		{name: "logmine", extra: []leanstore.Option{leanstore.WithLogger(funcr.New(mine.write, funcr.Options{}))}, want: &mine, not: &ctrlLog},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lean := leancache.New(leancache.Options{
				Name:           tc.name,
				DisableMetrics: true,
				Leanstore:      tc.extra,
			})
			c, err := lean.NewCache(user.Config(), cache.Options{Scheme: newScheme()})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer func() { cancel(); wg.Wait() }()
			wg.Go(func() { _ = c.Start(ctx) })
			if _, err := c.GetInformer(ctx, &corev1.ConfigMap{}, cache.BlockUntilSynced(false)); err != nil {
				t.Fatal(err)
			}
			informer := tc.name + "/configmaps"
			waitFor(t, "the forbidden list's log line", func() (bool, error) {
				return len(tc.want.with(informer, "list/watch failed", "forbidden")) > 0, nil
			})
			if tc.want == &ctrlLog {
				if got := ctrlLog.with(informer, "list/watch failed"); !strings.Contains(got[0], "leancache") {
					t.Errorf("controller-runtime's logger got %q, want it under the name leancache", got[0])
				}
			}
			if got := tc.not.with(informer); len(got) > 0 {
				t.Errorf("the other logger got %q too", got)
			}
		})
	}
}
