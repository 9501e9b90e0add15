package reflector

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// watching is what the watches of one informer share, from its ListWatch.
type watching struct {
	c *conn
	// list is the informer's list (lister.list), for a re-list inside the
	// watch (leanWatch.relist).
	list func(ctx context.Context, rv string) (listResult, error)
	// next holds a streaming list's stream, which a re-list's watch
	// continues on, and the word that a re-list was cut short.
	next        *handoff
	idleTimeout time.Duration
	// example is an empty object of the informer's type, for bookmarks.
	example runtime.Object
}
