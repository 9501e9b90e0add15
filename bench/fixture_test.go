package bench_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cachetune/cachetune/internal/fixture"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
	"github.com/cachetune/cachetune/pkg/testkit/dataset"
)

var regenerate = flag.Bool("regenerate", false, "rebuild testdata/pods.json from Pods seeded on the local kube-apiserver")

const fixturePath = "testdata/pods.json"

// fixturePods is the number of Pods in the fixture: one per app of the
// dataset, since Pods of one app share their spec.
const fixturePods = 8

// TestRegenerateFixture reads Pods of the standard dataset back from a real
// server, managedFields and all, so that the benchmarks decode what informers
// really receive. It only runs with -regenerate.
func TestRegenerateFixture(t *testing.T) {
	if !*regenerate {
		t.Skip("run with -regenerate to rebuild " + fixturePath)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	srv, err := apiserver.Start(ctx, apiserver.Options{Progress: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	if err := dataset.Seed(ctx, srv.Config, dataset.Spec{Name: "standard", Namespace: "bench", Pods: fixturePods}); err != nil {
		t.Fatal(err)
	}
	list, err := srv.Clientset().CoreV1().Pods("bench").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list.ResourceVersion = ""
	// Compact, not indented: FieldsV1 keeps its raw JSON as read, so
	// indentation would inflate every managedFields entry.
	b, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fixturePath, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// loadPods returns n Pods: copies of the fixture's, renamed and with unique
// UIDs, as a dataset of n Pods would be.
func loadPods(tb testing.TB, n int) *corev1.PodList {
	tb.Helper()
	pods := fixture.Pods(tb)
	out := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "1000"}}
	out.Items = make([]corev1.Pod, n)
	for i := range out.Items {
		p := pods[i%len(pods)].DeepCopy()
		p.Name = fmt.Sprintf("%s-%05d", p.Name, i)
		p.UID = types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
		out.Items[i] = *p
	}
	return out
}
