package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	demov1 "github.com/cachetune/cachetune/controllerruntime/examples/appconfig-operator/api/v1"
	"github.com/cachetune/cachetune/controllerruntime/examples/appconfig-operator/config/crd"
	"github.com/cachetune/cachetune/controllerruntime/examples/appconfig-operator/internal/controller"
	"github.com/cachetune/cachetune/controllerruntime/leancache"
)

// installCRDs installs the embedded CRDs and waits until they are served.
func installCRDs(cfg *rest.Config) error {
	var crds []*apiextensionsv1.CustomResourceDefinition
	err := fs.WalkDir(crd.Bases, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := crd.Bases.ReadFile(path)
		if err != nil {
			return err
		}
		c := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, c); err != nil {
			return fmt.Errorf("decode %s: %w", path, err)
		}
		crds = append(crds, c)
		return nil
	})
	if err != nil {
		return err
	}
	_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: crds})
	return err
}

// demo creates an AppConfig before its Secret, then the Secret, then changes
// the Secret, and shows what the operator did at each step and what its
// informers hold.
func demo(ctx context.Context, mgr ctrl.Manager, lean *leancache.Cache, ns string) error {
	log := ctrl.Log.WithName("demo")
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return ctx.Err()
	}
	// Writes go straight to the server; reads below too, to show what it holds.
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	app := &demov1.AppConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec:       demov1.AppConfigSpec{Data: map[string]string{"LOG_LEVEL": "info", "FEATURES": "search,cart"}, SecretName: "web-credentials"},
	}
	log.Info("step 1: an AppConfig whose Secret does not exist yet", "appconfig", client.ObjectKeyFromObject(app))
	if err := c.Create(ctx, app); err != nil {
		return err
	}
	if err := waitPhase(ctx, c, app, demov1.PhaseWaitingForSecret, ""); err != nil {
		return err
	}

	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "web-credentials", Namespace: ns},
		StringData: map[string]string{"password": "s3cret"},
	}
	log.Info("step 2: the Secret appears; the metadata-only watch wakes the AppConfig")
	if err := c.Create(ctx, secret); err != nil {
		return err
	}
	if err := waitPhase(ctx, c, app, demov1.PhaseReady, secret.ResourceVersion); err != nil {
		return err
	}

	log.Info("step 3: the Secret changes; the ConfigMap follows its resourceVersion")
	secret.StringData = map[string]string{"password": "n3w-s3cret"}
	if err := c.Update(ctx, secret); err != nil {
		return err
	}
	if err := waitPhase(ctx, c, app, demov1.PhaseReady, secret.ResourceVersion); err != nil {
		return err
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKeyFromObject(app), &cm); err != nil {
		return err
	}
	log.Info("rendered", "configMap", cm.Name, "data", cm.Data, controller.SecretVersionAnnotation, cm.Annotations[controller.SecretVersionAnnotation])

	if err := printInformers(lean); err != nil {
		return err
	}
	log.Info("the operator keeps running; Ctrl-C stops it")
	return nil
}

// waitPhase waits until app's status has phase (and secretVersion, when set).
func waitPhase(ctx context.Context, c client.Client, app *demov1.AppConfig, phase, secretVersion string) error {
	var got demov1.AppConfig
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, shortly, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(app), &got); err != nil {
			return false, err
		}
		return got.Status.Phase == phase && (secretVersion == "" || got.Status.SecretVersion == secretVersion), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for AppConfig %s to be %s: %w (status %+v)", app.Name, phase, err, got.Status)
	}
	ctrl.Log.WithName("demo").Info("status", "phase", got.Status.Phase, "configMap", got.Status.ConfigMap, "secretVersion", got.Status.SecretVersion)
	return nil
}

// printInformers prints what each leanstore informer of the manager holds.
func printInformers(lean *leancache.Cache) error {
	census := map[string]int{}
	bytes := map[string]int64{}
	for _, c := range lean.Census() {
		census[c.Informer], bytes[c.Informer] = c.Objects, c.EstimatedBytes
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	var err error
	printf := func(format string, a ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, a...)
		}
	}
	printf("INFORMER\tWIRE\tLIST PATH\tSYNCED\tOBJECTS\tEST. BYTES\n")
	for _, st := range lean.Status() {
		printf("%s\t%s\t%s\t%v\t%d\t%d\n", st.Informer, st.Wire, st.ListPath, st.Synced, census[st.Informer], bytes[st.Informer])
	}
	if err != nil {
		return err
	}
	return w.Flush()
}
