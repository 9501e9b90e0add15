// Package controller is the appconfig operator's reconciler, written the
// kubebuilder way: a Reconciler reading through the manager's client (the
// cache), registered with builder.ControllerManagedBy, with one metadata-only
// watch.
package controller

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	demov1 "github.com/cachetune/cachetune/controllerruntime/examples/appconfig-operator/api/v1"
)

const (
	// ManagedByLabel marks the ConfigMaps this operator renders; the manager's
	// cache holds only those (see NewManager).
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedBy is ManagedByLabel's value.
	ManagedBy = "appconfig-operator"
	// SecretVersionAnnotation on a rendered ConfigMap is the resourceVersion of
	// the Secret it was rendered with.
	SecretVersionAnnotation = "demo.cachetune.dev/secret-version"
	// secretNameField indexes AppConfigs by spec.secretName, to find those a
	// Secret concerns.
	secretNameField = "spec.secretName"
)

// AppConfigReconciler renders each AppConfig's ConfigMap.
type AppConfigReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

// Reconcile brings one AppConfig's ConfigMap and status up to date. Every
// read goes through the manager's cache: the AppConfig (its own Go type,
// decoded from JSON), the ConfigMap (only labelled ones are cached) and the
// Secret's metadata (a metadata-only informer: the cache never holds a
// Secret's data).
func (r *AppConfigReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	var app demov1.AppConfig
	if err := r.Get(ctx, req.NamespacedName, &app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	secretVersion := ""
	if name := app.Spec.SecretName; name != "" {
		secret := &metav1.PartialObjectMetadata{}
		secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		err := r.Get(ctx, types.NamespacedName{Namespace: app.Namespace, Name: name}, secret)
		if apierrors.IsNotFound(err) {
			log.Info("waiting for the Secret", "secret", name)
			return ctrl.Result{}, r.setStatus(ctx, &app, demov1.AppConfigStatus{Phase: demov1.PhaseWaitingForSecret})
		}
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("get Secret %s/%s: %w", app.Namespace, name, err)
		}
		secretVersion = secret.ResourceVersion
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: app.Namespace}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		cm.Data = maps.Clone(app.Spec.Data)
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		cm.Labels[ManagedByLabel] = ManagedBy
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[SecretVersionAnnotation] = secretVersion
		return controllerutil.SetControllerReference(&app, cm, r.Scheme)
	})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("render ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	if op != controllerutil.OperationResultNone {
		log.Info("rendered the ConfigMap", "configMap", cm.Name, "operation", op, "secretVersion", secretVersion)
	}
	return ctrl.Result{}, r.setStatus(ctx, &app, demov1.AppConfigStatus{
		Phase: demov1.PhaseReady, ConfigMap: cm.Name, SecretVersion: secretVersion,
	})
}

// setStatus writes st (with the generation it is for) unless it is already
// there: a status write that changes nothing would only wake the controller
// again.
func (r *AppConfigReconciler) setStatus(ctx context.Context, app *demov1.AppConfig, st demov1.AppConfigStatus) error {
	st.ObservedGeneration = app.Generation
	if app.Status == st {
		return nil
	}
	app.Status = st
	if err := r.Status().Update(ctx, app); err != nil {
		return fmt.Errorf("update status of AppConfig %s/%s: %w", app.Namespace, app.Name, err)
	}
	return nil
}

// SetupWithManager registers the controller: AppConfigs, the ConfigMaps they
// own, and the Secrets they name, watched for their metadata only.
func (r *AppConfigReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &demov1.AppConfig{}, secretNameField, func(o client.Object) []string {
		if n := o.(*demov1.AppConfig).Spec.SecretName; n != "" {
			return []string{n}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index AppConfigs by %s: %w", secretNameField, err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&demov1.AppConfig{}).
		Owns(&corev1.ConfigMap{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.appConfigsForSecret), builder.OnlyMetadata).
		Complete(r)
}

// appConfigsForSecret maps a Secret (its metadata) to the AppConfigs that name it.
func (r *AppConfigReconciler) appConfigsForSecret(ctx context.Context, secret client.Object) []reconcile.Request {
	var apps demov1.AppConfigList
	if err := r.List(ctx, &apps, client.InNamespace(secret.GetNamespace()), client.MatchingFields{secretNameField: secret.GetName()}); err != nil {
		logf.FromContext(ctx).Error(err, "list AppConfigs of a Secret", "secret", client.ObjectKeyFromObject(secret))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(apps.Items))
	for _, a := range apps.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&a)})
	}
	return reqs
}
