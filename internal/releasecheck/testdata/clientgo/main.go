// Command clientgo is what a client-go controller's author writes after
// `go get github.com/cachetune/cachetune/pkg/leanstore@VERSION`: a leanstore
// informer factory in place of client-go's, here on the test kit's local
// kube-apiserver. The release check builds and runs it in a module of its
// own, outside the cachetune checkout, with no replace directive.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/cachetune/cachetune/pkg/leanstore"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "clientgo:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	srv, err := apiserver.Start(ctx, apiserver.Options{Progress: os.Stderr})
	if err != nil {
		return err
	}
	defer srv.Stop()

	cs := srv.Clientset()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "outside", Namespace: "default"}, Data: map[string]string{"k": "v"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return err
	}

	factory := leanstore.NewSharedInformerFactory(cs, 0, leanstore.WithStripLastApplied())
	lister := factory.Core().V1().ConfigMaps().Lister()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("%v did not sync: %v", typ, factory.Err())
		}
	}
	got, err := lister.ConfigMaps("default").Get("outside")
	if err != nil {
		return err
	}
	if len(got.ManagedFields) != 0 {
		return fmt.Errorf("the cached ConfigMap kept %d managedFields entries", len(got.ManagedFields))
	}
	all, err := lister.List(labels.Everything())
	if err != nil {
		return err
	}
	fmt.Printf("leanstore: %d ConfigMaps cached, stripped; status %s\n", len(all), factory.Status()[0].ListPath)
	cancel()
	return nil
}
