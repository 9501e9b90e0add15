package shard_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
)

var srv *apiserver.Server

func TestMain(m *testing.M) {
	os.Exit(apiserver.Main(m, apiserver.Options{}, &srv))
}

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds, failing the test after a bound that a
// loaded 2-core machine keeps.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// refusing returns a copy of cfg whose client fails the requests refuse
// picks, as a server or network that refuses them would.
func refusing(cfg *rest.Config, refuse func(*http.Request) error) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if err := refuse(r); err != nil {
				return nil, err
			}
			return rt.RoundTrip(r)
		})
	})
	return c
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// isLeaseWatch reports whether r watches Leases.
func isLeaseWatch(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/leases") && r.URL.Query().Get("watch") == "true"
}
