package faults_test

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cachetune/cachetune/pkg/testkit/faults"
)

// A client behind the proxy meets a 503 on its first LIST of ConfigMaps, and
// then the real answer.
func Example() {
	p, err := faults.Start(srv.Config)
	if err != nil {
		panic(err)
	}
	defer p.Close()
	cs := kubernetes.NewForConfigOrDie(p.Config(srv.Config))

	p.AddRule(faults.Rule{
		Match: faults.Match{Resource: "configmaps", Verb: faults.List},
		Fault: faults.Status(503, 0),
		Count: 1,
	})
	ctx := context.Background()
	_, err = cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	fmt.Println("first list unavailable:", apierrors.IsServiceUnavailable(err))
	_, err = cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	fmt.Println("second list:", err)
	c := p.Counts()
	fmt.Println("lists:", c.ByVerb[faults.List], "faulted:", c.Faulted)
	// Output:
	// first list unavailable: true
	// second list: <nil>
	// lists: 2 faulted: 1
}
