package faults_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cachetune/cachetune/pkg/testkit/faults"
)

// A client behind the proxy meets a 503 on its first LIST of ConfigMaps, and
// then the real answer. The upstream here is a stand-in that answers one
// list, so that the example runs anywhere; in tests it is a real API server
// (see the apiserver package), and the code is the same.
func Example() {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"app-config","namespace":"default"}}]}`)
	}))
	defer upstream.Close()
	cfg := &rest.Config{Host: upstream.URL}

	p, err := faults.Start(cfg)
	if err != nil {
		panic(err)
	}
	defer p.Close()
	cs := kubernetes.NewForConfigOrDie(p.Config(cfg))

	p.AddRule(faults.Rule{
		Match: faults.Match{Resource: "configmaps", Verb: faults.List},
		Fault: faults.Status(503, 0),
		Count: 1,
	})
	ctx := context.Background()
	_, err = cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	fmt.Println("first list unavailable:", apierrors.IsServiceUnavailable(err))
	list, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	fmt.Println("second list:", err, len(list.Items), "item(s)")
	c := p.Counts()
	fmt.Println("lists:", c.ByVerb[faults.List], "faulted:", c.Faulted)
	// Output:
	// first list unavailable: true
	// second list: <nil> 1 item(s)
	// lists: 2 faulted: 1
}
