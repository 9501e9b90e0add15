package dataset

import (
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// PodsDistinct makes every Pod different from every other in everything a
// cache could share: its labels (some keys and every value), annotations,
// owner, container names, images, commands and arguments, env names and
// values, ports, resources, probes and volumes, as if each Pod came from a
// workload and a team of its own. With the default PodEnv a Pod is about 19.7
// KB of JSON as the server returns it (managedFields of two managers and
// kubectl's last-applied annotation included): the shape of an outside
// measurement of re-list peaks that cachebench's workload-shaped Pods did not
// reproduce. Pod i is the same in every dataset of the same name, so that a
// dataset can grow (Extend) and churn (Churner).
const PodsDistinct PodShape = "distinct"

// Words the distinct Pods draw their names from: a few hundred combinations,
// each made unique by the Pod's number.
var (
	distinctSystems = []string{"billing", "routing", "ingest", "render", "scoring", "archive", "identity", "pricing", "dispatch", "telemetry", "ledger", "search"}
	distinctRoles   = []string{"api", "worker", "cron", "gateway", "indexer", "exporter", "sync", "cache"}
	distinctTeams   = []string{"atlas", "borealis", "cobalt", "delta", "ember", "fjord", "granite", "harbor", "iris", "juniper"}
	distinctWords   = []string{"alpha", "bravo", "cedar", "dune", "echo", "flint", "grove", "haze", "ivory", "jade", "kelp", "lumen", "mesa", "nova", "onyx", "pike"}
)

// distinctPod is the generator of Pod i of a distinct dataset: a random
// source seeded by i, so that the Pod is the same whenever it is made.
type distinctPod struct {
	i   int
	rng *rand.Rand
	id  string // the Pod's own token, in names and values
}

func newDistinctPod(i int) *distinctPod {
	rng := rand.New(rand.NewPCG(uint64(i), 0x9e3779b97f4a7c15))
	return &distinctPod{i: i, rng: rng, id: fmt.Sprintf("%05d%04x", i, rng.Uint32()&0xffff)}
}

func (d *distinctPod) pick(words []string) string { return words[d.rng.IntN(len(words))] }

// hex returns n random hexadecimal digits.
func (d *distinctPod) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[d.rng.IntN(16)]
	}
	return string(b)
}

// distinctPodSpec returns the desired state of Pod i of a distinct dataset.
// envPerContainer sets the size, as for the other shapes.
func distinctPodSpec(ns, dataset string, i, envPerContainer int) *corev1.Pod {
	d := newDistinctPod(i)
	system, role, team := d.pick(distinctSystems), d.pick(distinctRoles), d.pick(distinctTeams)
	app := fmt.Sprintf("%s-%s-%s", system, role, d.id)
	hash := d.hex(10)
	version := fmt.Sprintf("%d.%d.%d-%s", 1+d.rng.IntN(4), d.rng.IntN(30), d.rng.IntN(200), d.hex(7))
	image := fmt.Sprintf("registry.example.com/%s/%s:%s", team, app, version)
	rsName := app + "-" + hash

	labels := map[string]string{
		"app.kubernetes.io/name":                        app,
		"app.kubernetes.io/instance":                    app + "-" + d.pick(distinctWords),
		"app.kubernetes.io/version":                     version,
		"app.kubernetes.io/component":                   role,
		"app.kubernetes.io/part-of":                     system,
		"pod-template-hash":                             hash,
		"team":                                          team,
		fmt.Sprintf("%s.example.com/cost-center", team): fmt.Sprintf("cc-%d-%s", 1000+d.rng.IntN(9000), d.id),
		fmt.Sprintf("%s.example.com/%s", team, d.pick(distinctWords)): d.id,
		LabelDataset: dataset,
	}
	annotations := map[string]string{
		"checksum/config":                         d.hex(64),
		"build.example.com/commit":                d.hex(40),
		"build.example.com/pipeline":              fmt.Sprintf("https://ci.example.com/%s/%s/pipelines/%d", team, app, 10000+d.rng.IntN(90000)),
		fmt.Sprintf("%s.example.com/owner", team): fmt.Sprintf("%s-%s@example.com", d.pick(distinctWords), d.id),
	}
	if d.rng.IntN(2) == 0 {
		annotations["prometheus.io/scrape"] = "true"
		annotations["prometheus.io/port"] = fmt.Sprint(9000 + d.rng.IntN(1000))
	}

	containers := []corev1.Container{d.container(app, image, 8080+int32(d.rng.IntN(100)), envPerContainer)}
	if d.rng.IntN(3) > 0 {
		side := fmt.Sprintf("%s-%s", d.pick(distinctWords), d.id)
		containers = append(containers, d.container(side, fmt.Sprintf("registry.example.com/%s/%s:%s", team, side, d.hex(12)), 15000+int32(d.rng.IntN(1000)), envPerContainer/2))
	}
	init := d.container("init-"+d.id, image, 0, max(1, envPerContainer/3))
	init.Ports, init.LivenessProbe = nil, nil

	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        fmt.Sprintf("%s-%s", app, d.hex(5)),
			Namespace:   ns,
			Labels:      labels,
			Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rsName,
				UID:        types.UID(fmt.Sprintf("%s-%s-4%s-8%s-%s", d.hex(8), d.hex(4), d.hex(3), d.hex(3), d.hex(12))),
				Controller: ptr(true), BlockOwnerDeletion: ptr(true),
			}},
		},
		Spec: corev1.PodSpec{
			InitContainers:                []corev1.Container{init},
			Containers:                    containers,
			Volumes:                       d.volumes(app),
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr(int64(10 + 10*d.rng.IntN(6))),
			DNSPolicy:                     corev1.DNSClusterFirst,
			ServiceAccountName:            app,
			NodeName:                      fmt.Sprintf("node-%03d", d.rng.IntN(97)),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr(true),
				RunAsUser:    ptr(int64(10000 + d.rng.IntN(50000))),
				FSGroup:      ptr(int64(10000 + d.rng.IntN(50000))),
			},
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(60 * (1 + d.rng.IntN(10))))},
				{Key: team + ".example.com/dedicated", Operator: corev1.TolerationOpEqual, Value: system, Effect: corev1.TaintEffectNoSchedule},
			},
		},
	}
}

// container returns a container of its own name, image, command, env, port
// (none when port is 0), resources and liveness probe.
func (d *distinctPod) container(name, image string, port int32, nEnv int) corev1.Container {
	c := corev1.Container{
		Name:    name,
		Image:   image,
		Command: []string{"/opt/" + name + "/bin/run"},
		Args: []string{
			fmt.Sprintf("--config=/etc/%s/%s.yaml", name, d.pick(distinctWords)),
			fmt.Sprintf("--shard=%d", d.rng.IntN(64)),
		},
		Env:       d.env(name, nEnv),
		Resources: d.resources(),
		VolumeMounts: []corev1.VolumeMount{
			{Name: "config-" + d.id, MountPath: "/etc/" + name, ReadOnly: true},
			{Name: "scratch-" + d.id, MountPath: "/var/tmp/" + name},
		},
		ImagePullPolicy:          corev1.PullIfNotPresent,
		TerminationMessagePath:   "/dev/termination-log",
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr(false),
			ReadOnlyRootFilesystem:   ptr(d.rng.IntN(2) == 0),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
	if port > 0 {
		portName := fmt.Sprintf("p%d", port)
		c.Ports = []corev1.ContainerPort{{Name: portName, ContainerPort: port, Protocol: corev1.ProtocolTCP}}
		path := fmt.Sprintf("/%s/%s/healthz", d.pick(distinctWords), d.id)
		c.LivenessProbe = &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString(portName)}},
			InitialDelaySeconds: int32(5 + d.rng.IntN(30)), PeriodSeconds: int32(5 + d.rng.IntN(20)), TimeoutSeconds: 1 + int32(d.rng.IntN(4)), FailureThreshold: 3, SuccessThreshold: 1,
		}
	}
	return c
}

// resources returns requests of the container's own and limits two to four
// times them.
func (d *distinctPod) resources() corev1.ResourceRequirements {
	cpu, mem := 10*(1+d.rng.IntN(50)), 32*(1+d.rng.IntN(32))
	f := 2 + d.rng.IntN(3)
	return resources(fmt.Sprintf("%dm", cpu), fmt.Sprintf("%dMi", mem), fmt.Sprintf("%dm", f*cpu), fmt.Sprintf("%dMi", f*mem))
}

// env returns n literal variables of the Pod's own names and values, and a
// field and a secret reference.
func (d *distinctPod) env(prefix string, n int) []corev1.EnvVar {
	out := []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		{Name: upper(d.pick(distinctWords)) + "_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: prefix + "-credentials"}, Key: d.pick(distinctWords)}}},
	}
	for j := range n {
		out = append(out, corev1.EnvVar{
			Name: fmt.Sprintf("%s_%s_%02d", upper(d.pick(distinctWords)), upper(d.pick(distinctWords)), j),
			Value: fmt.Sprintf("https://%s-%s.%s.example.com:%d/v%d/%s?tenant=%s",
				d.pick(distinctWords), d.id, d.pick(distinctSystems), 8000+d.rng.IntN(1000), 1+d.rng.IntN(3), d.hex(8), d.hex(6)),
		})
	}
	return out
}

func (d *distinctPod) volumes(app string) []corev1.Volume {
	return []corev1.Volume{
		{Name: "config-" + d.id, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config-" + d.hex(6)}, DefaultMode: ptr(int32(0o644))}}},
		{Name: "scratch-" + d.id, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "tls-" + d.id, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: app + "-tls-" + d.hex(6), DefaultMode: ptr(int32(0o400))}}},
	}
}
