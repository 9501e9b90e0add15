package failure_test

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cachetune/cachetune/pkg/failure"
)

// A reconciler's error policy: requeue what may pass, record what will not.
func ExampleClassify() {
	errs := []error{
		apierrors.NewTooManyRequests("slow down", 2),
		apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "a", errors.New("the object has been modified")),
		failure.Reconcile(failure.InvalidSpec, "default/a", errors.New("spec.size must be positive")),
		failure.Watcher(failure.WatchStartFailed, "pods", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no RBAC"))),
	}
	for _, err := range errs {
		c := failure.Classify(err)
		switch {
		case c.Permanent:
			fmt.Println("record, wait for a change:", c)
		case c.Transient:
			delay, ok := failure.RetryAfter(err)
			fmt.Println("requeue:", c, delay, ok)
		}
	}
	// Output:
	// requeue: api/TooManyRequests (429, transient, client-retried) 2s true
	// requeue: api/Conflict (409, transient) 0s false
	// record, wait for a change: reconcile/InvalidSpec (permanent)
	// record, wait for a change: watcher/WatchStartFailed: api/Forbidden (403, permanent)
}
