package reconcile

import (
	"context"
	"strings"
	"time"

	"k8s.io/client-go/tools/cache"
)

// Func reconciles the object named by req.Key: it reads the object (from a
// lister, not the API server), makes the world match it, and writes status.
// Returning an error hands the key to the error policy; classify it with
// package failure's typed errors, for example
// failure.Reconcile(failure.InvalidSpec, req.Key.String(), err) for a spec
// that cannot work. A nil error resets the key's backoff.
//
// ctx ends when the loop stops (and after WithTimeout, if set); a Func must
// honour it, since the loop waits for every reconcile in flight before Run
// returns.
type Func func(ctx context.Context, req Request) (Result, error)

// Request is one reconcile of one key.
type Request struct {
	// Key names the object: namespace/name, or name alone for a
	// cluster-scoped object.
	Key cache.ObjectName
	// Trigger says why the reconcile runs. Several reasons merge into one
	// run when they arrive before it starts.
	Trigger Trigger
	// Attempt counts the key's failures in a row before this run: 0 when its
	// last reconcile succeeded (or it never ran).
	Attempt int
}

// Result is what a successful reconcile asks of the loop.
type Result struct {
	// RequeueAfter, when positive, runs the key again after this long even
	// if nothing changes: for polling something outside the cluster, or a
	// deadline written in the spec. It is ignored when the reconcile returns
	// an error (the error policy decides then).
	RequeueAfter time.Duration
}

// Trigger is a set of reasons a key was queued. Reasons that arrive while a
// key waits merge into one run, so a Trigger may hold several, e.g.
// ObjectChanged|Retry.
type Trigger uint8

// The reasons a key runs.
const (
	// ObjectChanged: the watched object was added, updated or deleted.
	ObjectChanged Trigger = 1 << iota
	// RelatedChanged: an object registered with WatchRelated changed and
	// maps to this key (a child, a referenced ConfigMap).
	RelatedChanged
	// Requeued: the key's last reconcile returned Result.RequeueAfter.
	Requeued
	// Retry: the key's last reconcile failed and the error policy scheduled
	// another attempt (a transient error, or a parked key's recheck).
	Retry
	// Resync: the informer's periodic resync redelivered the object
	// unchanged.
	Resync
	// Enqueued: code called Enqueue or EnqueueAfter.
	Enqueued
)

var triggerNames = []struct {
	t    Trigger
	name string
}{
	{ObjectChanged, "object-changed"},
	{RelatedChanged, "related-changed"},
	{Requeued, "requeued"},
	{Retry, "retry"},
	{Resync, "resync"},
	{Enqueued, "enqueued"},
}

// Has reports whether t includes every reason in x.
func (t Trigger) Has(x Trigger) bool { return x != 0 && t&x == x }

// String names the reasons joined by "+", e.g. "object-changed+retry";
// "none" for the empty set.
func (t Trigger) String() string {
	if t == 0 {
		return "none"
	}
	var names []string
	for _, tn := range triggerNames {
		if t.Has(tn.t) {
			names = append(names, tn.name)
		}
	}
	return strings.Join(names, "+")
}

// each calls fn with every single reason in t.
func (t Trigger) each(fn func(name string)) {
	for _, tn := range triggerNames {
		if t.Has(tn.t) {
			fn(tn.name)
		}
	}
}
