package retry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cachetune/cachetune/pkg/failure"
)

// CallWithTimeout runs fn with a context that ends after d, to keep one slow
// API call from holding a reconcile. If fn fails because that deadline
// passed, while ctx itself is still live, the error becomes a
// *failure.Error (layer client, reason Timeout, transient) naming the call:
//
//	err := retry.CallWithTimeout(ctx, 10*time.Second, "get configmap "+key, func(ctx context.Context) error {
//		_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
//		return err
//	})
//
// fn must honour its context: CallWithTimeout waits for it to return rather
// than leave it running. Errors for any other reason, and errors after ctx
// itself ended, are returned as they are.
func CallWithTimeout(ctx context.Context, d time.Duration, call string, fn func(context.Context) error) error {
	_, err := ValueWithTimeout(ctx, d, call, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, fn(ctx)
	})
	return err
}

// ValueWithTimeout is CallWithTimeout for a call that returns a value:
//
//	pod, err := retry.ValueWithTimeout(ctx, 10*time.Second, "get pod "+key, func(ctx context.Context) (*corev1.Pod, error) {
//		return cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
//	})
func ValueWithTimeout[T any](ctx context.Context, d time.Duration, call string, fn func(context.Context) (T, error)) (T, error) {
	callCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	v, err := fn(callCtx)
	if err != nil && ctx.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded) && !answered(err) {
		return v, &failure.Error{
			Layer:  failure.LayerClient,
			Reason: failure.Timeout,
			Call:   call,
			Err:    fmt.Errorf("no answer within %s: %w", d, err),
		}
	}
	return v, err
}

// answered reports whether err is an answer from the server (an API status),
// which stands even if it came just as the deadline passed.
func answered(err error) bool {
	l := failure.Classify(err).Layer
	return l == failure.LayerAPI
}
