package dataset

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// NodesGVR is the dataset's cluster-scoped resource.
var NodesGVR = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}

// ClusterScoped reports whether a resource of the dataset has no namespace.
func ClusterScoped(gvr schema.GroupVersionResource) bool { return gvr == NodesGVR }

// nodeImages is the pool a Node's status.images are drawn from: the images a
// kubelet reports (it reports at most 50, the largest first).
var nodeImages = func() []string {
	var out []string
	for _, app := range apps {
		for v := 0; v < 4; v++ {
			out = append(out, fmt.Sprintf("registry.example.com/shop/%s:v1.%d.3", app, 4+v))
		}
	}
	return append(out, []string{
		"registry.example.com/mesh/envoy:v1.31.2", "registry.example.com/mesh/envoy:v1.30.6",
		"registry.k8s.io/kube-proxy:v1.37.2", "registry.k8s.io/pause:3.10",
		"registry.k8s.io/coredns/coredns:v1.12.1", "registry.k8s.io/metrics-server/metrics-server:v0.8.0",
		"registry.example.com/observability/node-exporter:v1.9.1", "registry.example.com/observability/fluent-bit:3.2.4",
		"registry.example.com/csi/ebs-csi-driver:v1.41.0", "registry.example.com/csi/livenessprobe:v2.15.0",
		"registry.example.com/csi/node-driver-registrar:v2.13.0", "registry.example.com/cni/cilium:v1.17.3",
		"registry.example.com/cni/cilium-envoy:v1.32.5", "registry.example.com/security/falco:0.40.0",
		"registry.example.com/security/trivy-operator:0.26.1", "registry.example.com/ingress/ingress-nginx:v1.12.1",
		"registry.example.com/platform/cert-manager-controller:v1.17.2", "registry.example.com/platform/external-dns:v0.16.1",
		"registry.example.com/platform/cluster-autoscaler:v1.37.0", "registry.example.com/platform/kyverno:v1.14.1",
	}...)
}()

// nodeName is the name of Node i of the dataset in namespace ns.
func nodeName(ns string, i int) string { return fmt.Sprintf("%s-node-%04d", ns, i) }

// nodeObject is Node i as a kubelet registers it: labels of a cloud node pool,
// the kubelet's annotations, a pod CIDR and a provider ID.
func nodeObject(spec Spec, i int) *corev1.Node {
	name := nodeName(spec.Namespace, i)
	zone := []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}[i%3]
	instance := fmt.Sprintf("i-%017x", 0x0a1b2c3d4e5f6+i)
	return &corev1.Node{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				LabelDataset:                               spec.Name,
				LabelNamespace:                             spec.Namespace,
				"kubernetes.io/hostname":                   name,
				"kubernetes.io/os":                         "linux",
				"kubernetes.io/arch":                       "amd64",
				"beta.kubernetes.io/os":                    "linux",
				"beta.kubernetes.io/arch":                  "amd64",
				"beta.kubernetes.io/instance-type":         "m6i.2xlarge",
				"node.kubernetes.io/instance-type":         "m6i.2xlarge",
				"topology.kubernetes.io/region":            "eu-west-1",
				"topology.kubernetes.io/zone":              zone,
				"failure-domain.beta.kubernetes.io/region": "eu-west-1",
				"failure-domain.beta.kubernetes.io/zone":   zone,
				"topology.ebs.csi.aws.com/zone":            zone,
				"node-role.kubernetes.io/worker":           "",
				"node.example.com/pool":                    fmt.Sprintf("general-%d", i%4),
				"node.example.com/capacity-type":           []string{"ON_DEMAND", "SPOT"}[i%2],
			},
			Annotations: map[string]string{
				"node.alpha.kubernetes.io/ttl":                           "0",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
				"csi.volume.kubernetes.io/nodeid":                        fmt.Sprintf(`{"ebs.csi.aws.com":%q}`, instance),
				"alpha.kubernetes.io/provided-node-ip":                   nodeIP(i),
			},
		},
		Spec: corev1.NodeSpec{
			PodCIDR:    fmt.Sprintf("10.%d.%d.0/24", 100+i/256%100, i%256),
			PodCIDRs:   []string{fmt.Sprintf("10.%d.%d.0/24", 100+i/256%100, i%256)},
			ProviderID: "aws:///" + zone + "/" + instance,
		},
	}
}

func nodeIP(i int) string { return fmt.Sprintf("10.0.%d.%d", i/250%250, 10+i%250) }

// nodeStatus is what a kubelet reports: capacity, conditions with heartbeats,
// addresses, versions and up to 50 images.
func nodeStatus(spec Spec, i int, now time.Time) corev1.NodeStatus {
	heartbeat := metav1.NewTime(now.Truncate(time.Second))
	booted := metav1.NewTime(now.Add(-time.Duration(24+i%240) * time.Hour).Truncate(time.Second))
	cond := func(t corev1.NodeConditionType, status corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: status, Reason: reason, Message: msg, LastHeartbeatTime: heartbeat, LastTransitionTime: booted}
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32386816Ki"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("104845292Ki"),
		"hugepages-1Gi": resource.MustParse("0"), "hugepages-2Mi": resource.MustParse("0"),
		"attachable-volumes-aws-ebs": resource.MustParse("25"),
	}
	allocatable := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("7910m"), corev1.ResourceMemory: resource.MustParse("31369984Ki"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("95551679124"),
		"hugepages-1Gi": resource.MustParse("0"), "hugepages-2Mi": resource.MustParse("0"),
		"attachable-volumes-aws-ebs": resource.MustParse("25"),
	}
	var images []corev1.ContainerImage
	for j := 0; j < 50 && j < len(nodeImages); j++ {
		img := nodeImages[(i*7+j)%len(nodeImages)]
		images = append(images, corev1.ContainerImage{
			Names:     []string{img[:len(img)-len(tagOf(img))] + "@sha256:" + fmt.Sprintf("%064x", len(img)*7919+j), img},
			SizeBytes: int64(20_000_000 + (len(img)*104729)%400_000_000),
		})
	}
	name := nodeName(spec.Namespace, i)
	return corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: allocatable,
		Conditions: []corev1.NodeCondition{
			cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
			cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
			cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
			cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
		},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: nodeIP(i)},
			{Type: corev1.NodeInternalDNS, Address: "ip-" + dashed(nodeIP(i)) + ".eu-west-1.compute.internal"},
			{Type: corev1.NodeHostName, Address: name},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID:               fmt.Sprintf("ec2%029x", i),
			SystemUUID:              fmt.Sprintf("ec2%05x-0000-4000-8000-%012x", i, i),
			BootID:                  fmt.Sprintf("%08x-1111-4222-8333-%012x", i, i*31),
			KernelVersion:           "6.1.134-152.225.amzn2023.x86_64",
			OSImage:                 "Amazon Linux 2023.7.20250428",
			ContainerRuntimeVersion: "containerd://1.7.27",
			KubeletVersion:          "v1.37.2",
			OperatingSystem:         "linux",
			Architecture:            "amd64",
		},
		Images: images,
	}
}

func tagOf(img string) string {
	for i := len(img) - 1; i >= 0 && img[i] != '/'; i-- {
		if img[i] == ':' {
			return img[i:]
		}
	}
	return ""
}

func dashed(ip string) string {
	b := []byte(ip)
	for i, c := range b {
		if c == '.' {
			b[i] = '-'
		}
	}
	return string(b)
}

// node registers Node i and writes its status. A Node that exists is left
// alone.
func (s *seeder) node(ctx context.Context, i int) error {
	nodes := s.pcs.CoreV1().Nodes()
	n := nodeObject(s.spec, i)
	created, err := nodes.Create(ctx, n, metav1.CreateOptions{FieldManager: ApplyManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create node %s: %w", n.Name, err)
	}
	created.Status = nodeStatus(s.spec, i, s.now)
	if _, err := nodes.UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: StatusManager}); err != nil {
		return fmt.Errorf("update status of node %s: %w", n.Name, err)
	}
	return nil
}
