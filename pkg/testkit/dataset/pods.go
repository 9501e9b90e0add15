package dataset

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// apps are the workloads Pods are spread over, as a Deployment's ReplicaSet would
// create them: Pods of one app share their spec, as they do in real clusters.
var apps = []string{"checkout", "payments", "catalog", "search", "frontend", "ledger", "inventory", "notifier"}

// PodShape says how much the Pods of a dataset have in common, which decides
// what sharing equal parts across cached objects can save.
type PodShape string

const (
	// PodsByWorkload spreads Pods over eight workloads; the Pods of one workload
	// share their spec apart from names, IPs and container IDs, as the replicas
	// of a Deployment do. It is the default.
	PodsByWorkload PodShape = "workload"
	// PodsUnique gives every Pod its own env values, image tag and
	// pod-template hash, as if each came from a workload of its own: the worst
	// case for sharing.
	PodsUnique PodShape = "unique"
)

// ParsePodShape reads a PodShape by name; "" is the default.
func ParsePodShape(s string) (PodShape, error) {
	switch PodShape(s) {
	case "", PodsByWorkload:
		return PodsByWorkload, nil
	case PodsUnique:
		return PodsUnique, nil
	case PodsDistinct:
		return PodsDistinct, nil
	}
	return "", fmt.Errorf("unknown pod shape %q (known: %s, %s, %s)", s, PodsByWorkload, PodsUnique, PodsDistinct)
}

// podSpec returns the desired state of Pod i, as a ReplicaSet controller creates
// it from its template. envPerContainer sets the size: 4 gives about 20 KB of
// JSON per Pod once the status and managedFields are added by the server.
func podSpec(ns, dataset string, i, envPerContainer int, shape PodShape) *corev1.Pod {
	if shape == PodsDistinct {
		return distinctPodSpec(ns, dataset, i, envPerContainer)
	}
	app := apps[i%len(apps)]
	// In a workload-shaped dataset the template (hash, image, env) is the
	// app's; in a unique one every Pod has a template of its own.
	tmpl := i % len(apps)
	salt := ""
	if shape == PodsUnique {
		tmpl = i
		salt = fmt.Sprintf("&replica=%06d", i)
	}
	hash := fmt.Sprintf("%09x", 0x5d8f7c9b4+tmpl)[:9]
	name := fmt.Sprintf("%s-%s-%05d", app, hash, i)
	version := fmt.Sprintf("1.%d.3", 4+i%len(apps))
	if shape == PodsUnique {
		version = fmt.Sprintf("1.%d.%d", 4+i%len(apps), i)
	}
	image := "registry.example.com/shop/" + app + ":v" + version

	containers := []corev1.Container{
		appContainer(app, image, envPerContainer, salt),
		sidecar("envoy", "registry.example.com/mesh/envoy:v1.31.2", 15001, envPerContainer/2, salt),
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: ns,
			Labels: map[string]string{
				"app.kubernetes.io/name":       app,
				"app.kubernetes.io/instance":   app + "-prod",
				"app.kubernetes.io/version":    version,
				"app.kubernetes.io/component":  "backend",
				"app.kubernetes.io/part-of":    "shop",
				"app.kubernetes.io/managed-by": "helm",
				"pod-template-hash":            hash,
				"team":                         "team-" + app,
				"tier":                         "backend",
				LabelDataset:                   dataset,
			},
			Annotations: map[string]string{
				"prometheus.io/scrape":                           "true",
				"prometheus.io/port":                             "9090",
				"prometheus.io/path":                             "/metrics",
				"checksum/config":                                fmt.Sprintf("%064x", 0xabcdef+tmpl),
				"cluster-autoscaler.kubernetes.io/safe-to-evict": "true",
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         "apps/v1",
				Kind:               "ReplicaSet",
				Name:               app + "-" + hash,
				UID:                types.UID(fmt.Sprintf("6f1c2a7e-0000-4000-8000-%012d", tmpl)),
				Controller:         ptr(true),
				BlockOwnerDeletion: ptr(true),
			}},
		},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{
				Name:            "migrate",
				Image:           image,
				Command:         []string{"/app/bin/migrate", "--wait-for-db", "--timeout=120s"},
				Env:             env(app, envPerContainer/3, salt),
				Resources:       resources("50m", "64Mi", "200m", "128Mi"),
				VolumeMounts:    []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app", ReadOnly: true}},
				SecurityContext: securityContext(),
			}},
			Containers:                    containers,
			Volumes:                       volumes(app),
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr(int64(30)),
			DNSPolicy:                     corev1.DNSClusterFirst,
			ServiceAccountName:            app,
			NodeName:                      fmt.Sprintf("node-%03d", i%97),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr(true),
				RunAsUser:      ptr(int64(10001)),
				FSGroup:        ptr(int64(10001)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
			},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: 100,
					PodAffinityTerm: corev1.PodAffinityTerm{
						LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": app}},
						TopologyKey:   "kubernetes.io/hostname",
					},
				}},
			}},
		},
	}
}

func appContainer(app, image string, nEnv int, salt string) corev1.Container {
	return corev1.Container{
		Name:    app,
		Image:   image,
		Command: []string{"/app/bin/" + app},
		Args:    []string{"--config=/etc/app/config.yaml", "--log-format=json", "--listen=:8080", "--metrics=:9090"},
		Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
			{Name: "grpc", ContainerPort: 9000, Protocol: corev1.ProtocolTCP},
		},
		Env:       env(app, nEnv, salt),
		Resources: resources("250m", "256Mi", "1", "1Gi"),
		LivenessProbe: &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
			InitialDelaySeconds: 10, PeriodSeconds: 10, TimeoutSeconds: 2, FailureThreshold: 3, SuccessThreshold: 1,
		},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("http")}},
			PeriodSeconds: 5, TimeoutSeconds: 2, FailureThreshold: 3, SuccessThreshold: 1,
		},
		StartupProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
			PeriodSeconds: 5, FailureThreshold: 30, TimeoutSeconds: 1, SuccessThreshold: 1,
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "config", MountPath: "/etc/app", ReadOnly: true},
			{Name: "tls", MountPath: "/etc/tls", ReadOnly: true},
			{Name: "tmp", MountPath: "/tmp"},
			{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
		},
		ImagePullPolicy:          corev1.PullIfNotPresent,
		TerminationMessagePath:   "/dev/termination-log",
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		SecurityContext:          securityContext(),
	}
}

func sidecar(name, image string, port int32, nEnv int, salt string) corev1.Container {
	return corev1.Container{
		Name:      name,
		Image:     image,
		Args:      []string{"--log-level=info", "--concurrency=2"},
		Ports:     []corev1.ContainerPort{{Name: name[:min(len(name), 10)], ContainerPort: port, Protocol: corev1.ProtocolTCP}},
		Env:       env(name, nEnv, salt),
		Resources: resources("50m", "64Mi", "500m", "256Mi"),
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}},
			PeriodSeconds: 10, TimeoutSeconds: 1, FailureThreshold: 3, SuccessThreshold: 1,
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "tmp", MountPath: "/tmp"},
			{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
		},
		ImagePullPolicy:          corev1.PullIfNotPresent,
		TerminationMessagePath:   "/dev/termination-log",
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		SecurityContext:          securityContext(),
	}
}

// env mixes literal values, field references and secret references, as Helm
// charts do. salt, when set, makes the literal values the Pod's own.
func env(prefix string, n int, salt string) []corev1.EnvVar {
	out := make([]corev1.EnvVar, 0, n+3)
	out = append(out,
		corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		corev1.EnvVar{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}},
		corev1.EnvVar{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: prefix + "-db"}, Key: "password"}}},
	)
	for j := range n {
		out = append(out, corev1.EnvVar{
			Name:  fmt.Sprintf("%s_SETTING_%02d", upper(prefix), j),
			Value: fmt.Sprintf("https://%s-%02d.internal.example.com:8443/api/v2?timeout=30s", prefix, j) + salt,
		})
	}
	return out
}

func resources(reqCPU, reqMem, limCPU, limMem string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(reqCPU), corev1.ResourceMemory: resource.MustParse(reqMem)},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(limCPU), corev1.ResourceMemory: resource.MustParse(limMem)},
	}
}

func securityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr(false),
		ReadOnlyRootFilesystem:   ptr(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

func volumes(app string) []corev1.Volume {
	return []corev1.Volume{
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}, DefaultMode: ptr(int32(0o644))}}},
		{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: app + "-tls", DefaultMode: ptr(int32(0o400))}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr(resource.MustParse("1Gi"))}}},
		{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: ptr(int32(0o644)),
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(3607))}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
			},
		}}},
	}
}

// podStatus is what a kubelet reports for a running Pod; it is written through the
// status subresource by a second field manager.
func podStatus(pod *corev1.Pod, i int, now time.Time) *corev1.Pod {
	started := metav1.NewTime(now.Add(-time.Duration(i%3600) * time.Second).Truncate(time.Second))
	st := corev1.PodStatus{
		Phase:     corev1.PodRunning,
		HostIP:    fmt.Sprintf("10.0.%d.%d", i%97/250, 10+i%97),
		HostIPs:   []corev1.HostIP{{IP: fmt.Sprintf("10.0.%d.%d", i%97/250, 10+i%97)}},
		PodIP:     fmt.Sprintf("10.%d.%d.%d", 100+i/65536%100, i/256%256, i%256),
		PodIPs:    []corev1.PodIP{{IP: fmt.Sprintf("10.%d.%d.%d", 100+i/65536%100, i/256%256, i%256)}},
		StartTime: &started,
		QOSClass:  corev1.PodQOSBurstable,
		Conditions: []corev1.PodCondition{
			{Type: "PodReadyToStartContainers", Status: corev1.ConditionTrue, LastTransitionTime: started},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: started},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: started},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: started},
		},
	}
	for _, c := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, containerStatus(c, i, started, true))
	}
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, containerStatus(c, i, started, false))
	}
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		Status:     st,
	}
}

func containerStatus(c corev1.Container, i int, started metav1.Time, terminated bool) corev1.ContainerStatus {
	id := fmt.Sprintf("containerd://%016x%016x%016x%016x", rand.Uint64(), rand.Uint64(), rand.Uint64(), rand.Uint64())
	s := corev1.ContainerStatus{
		Name:         c.Name,
		Image:        c.Image,
		ImageID:      c.Image + "@sha256:" + fmt.Sprintf("%064x", len(c.Image)*7919+len(c.Name)),
		ContainerID:  id,
		Ready:        !terminated,
		Started:      ptr(!terminated),
		RestartCount: int32(i % 3),
	}
	if terminated {
		s.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: started, FinishedAt: started, ContainerID: id}
	} else {
		s.State.Running = &corev1.ContainerStateRunning{StartedAt: started}
	}
	return s
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z':
			b[i] = c - 'a' + 'A'
		case c == '-':
			b[i] = '_'
		}
	}
	return string(b)
}

func ptr[T any](v T) *T { return &v }

// NewPod returns Pod i of a dataset as the server would hold it after seeding
// (spec, status, labels, annotations, owner references), without managedFields,
// which only the server writes. Benchmarks use it to build caches without a
// server; spec gives the namespace, dataset name and size.
func NewPod(spec Spec, i int, now time.Time) *corev1.Pod {
	spec.defaults()
	pod := podSpec(spec.Namespace, spec.Name, i, spec.PodEnv, spec.PodShape)
	body, err := withLastApplied(pod, pod.SetAnnotations)
	if err == nil {
		_ = json.Unmarshal(body, pod)
	}
	pod.Status = podStatus(pod, i, now).Status
	pod.UID = types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
	pod.ResourceVersion = fmt.Sprint(1000 + i)
	pod.TypeMeta = metav1.TypeMeta{}
	return pod
}
