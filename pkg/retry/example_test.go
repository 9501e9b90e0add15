package retry_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/cachetune/cachetune/pkg/backoff"
	"github.com/cachetune/cachetune/pkg/retry"
)

// A server that is overloaded twice, then answers.
func ExampleNewTransport() {
	var calls atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer s.Close()

	rt, err := retry.NewTransport(nil,
		retry.WithBackoff(backoff.Backoff{Initial: 10 * time.Millisecond, Factor: 2, Cap: 100 * time.Millisecond}),
		retry.WithOnRetry(func(a retry.Attempt) { fmt.Println("retrying after", a.StatusCode) }),
	)
	if err != nil {
		panic(err)
	}
	client := &http.Client{Transport: rt}
	resp, err := client.Get(s.URL)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, "after", calls.Load(), "attempts")
	// Output:
	// retrying after 429
	// retrying after 429
	// 200 after 3 attempts
}

func ExampleCallWithTimeout() {
	err := retry.CallWithTimeout(context.Background(), 50*time.Millisecond, "get configmap default/slow", func(ctx context.Context) error {
		<-ctx.Done() // a call that does not answer in time
		return ctx.Err()
	})
	fmt.Println(err)
	// Output:
	// get configmap default/slow: timeout: no answer within 50ms: context deadline exceeded
}
