package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/cachetune/cachetune/internal/bench"
	"github.com/cachetune/cachetune/internal/doctor"
	"github.com/cachetune/cachetune/internal/leakcheck"
	"github.com/cachetune/cachetune/pkg/testkit/apiserver"
)

// clientCA signs the client certificates of the tests: the package's server
// trusts it (--client-ca-file, see TestMain), as a kind, minikube or kubeadm
// cluster trusts the CA that signed its admin's certificate.
type clientCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// file is the CA certificate in PEM, for --client-ca-file.
	file string
}

var testCA *clientCA

// newClientCA creates a CA and writes its certificate into dir.
func newClientCA(dir string) (*clientCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "cachebench-test-client-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "client-ca.crt")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	return &clientCA{cert: cert, key: key, file: file}, nil
}

// issue returns a client certificate and key (PEM) for user in groups, which
// the API server reads as the user name (CN) and groups (O).
func (ca *clientCA) issue(t *testing.T, user string, groups ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: user, Organization: groups},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// The contexts of certKubeconfig: an admin (system:masters) and a user no
// RBAC rule grants anything, both authenticated by client certificate only.
const (
	certAdminContext      = "cert-admin"
	certRestrictedContext = "cert-restricted"
	certRestrictedUser    = "cachebench-cert-restricted"
)

// certKubeconfig writes a kubeconfig of the test server whose users
// authenticate with client certificates only, the way kind, minikube and
// kubeadm write them: no token, and no namespace in the contexts. Its
// current context is current.
func certKubeconfig(t *testing.T, current string) string {
	t.Helper()
	server, err := clientcmd.LoadFromFile(srv.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	for name, c := range server.Clusters {
		cfg.Clusters[name] = c
		for ctxName, user := range map[string]struct {
			name   string
			groups []string
		}{
			certAdminContext:      {"cachebench-cert-admin", []string{"system:masters"}},
			certRestrictedContext: {certRestrictedUser, nil},
		} {
			cert, key := testCA.issue(t, user.name, user.groups...)
			cfg.AuthInfos[user.name] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
			cfg.Contexts[ctxName] = &clientcmdapi.Context{Cluster: name, AuthInfo: user.name}
		}
	}
	cfg.CurrentContext = current
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestClientCertificateKubeconfig runs seed, doctor, run, shard and seed
// --clean with a kubeconfig whose users authenticate by client certificate
// only, as kind's, minikube's and kubeadm's do. Its current context is the
// restricted user's, so each command also proves that it honours --context;
// -n names the namespace (the contexts have none), and -o json is parsed.
func TestClientCertificateKubeconfig(t *testing.T) {
	if srv == nil {
		t.Skip("needs the local kube-apiserver")
	}
	leakcheck.Check(t)
	kubeconfig := certKubeconfig(t, certRestrictedContext)
	ns := srv.NewNamespace(t)
	cluster := []string{"--kubeconfig", kubeconfig, "--context", certAdminContext, "-n", ns, "-o", "json"}
	const pods = 20
	jsonOf := func(t *testing.T, v any, args ...string) {
		t.Helper()
		code, stdout, stderr := cachebench(t, append(args, cluster...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\nstderr:\n%s", args, code, stderr)
		}
		if err := json.Unmarshal([]byte(stdout), v); err != nil {
			t.Fatalf("%v: %v\nstdout:\n%s", args, err, stdout)
		}
	}

	var seeded seedResult
	jsonOf(t, &seeded, "seed", "--pods", fmt.Sprint(pods))
	if seeded.Namespace != ns || seeded.Objects["pods"] != pods || seeded.Pods == nil || seeded.Pods.Count != pods {
		t.Fatalf("seed: %+v, want %d pods in %s", seeded, pods, ns)
	}

	var report doctor.Report
	jsonOf(t, &report, "doctor", "--resources", "pods")
	if len(report.Resources) != 1 || report.Resources[0].Objects != pods || report.Namespace != ns {
		t.Errorf("doctor: namespace %q, resources %+v; want %d pods in %s", report.Namespace, report.Resources, pods, ns)
	}

	// A read-only run: the proxy that ends the watches authenticates with the
	// user's certificate.
	var rep bench.Report
	jsonOf(t, &rep, "run", "--modes", "client-go/typed/stream", "--relists", "1", "--idle", "200ms", "--settle", "200ms", "--out-dir", t.TempDir())
	if len(rep.Results) != 1 {
		t.Fatalf("run: %d results, want 1", len(rep.Results))
	}
	if res := rep.Results[0]; res.Error != "" || res.Objects != pods || len(res.Relists) != 1 || res.Relists[0].WatchesEnded == 0 || res.Relists[0].Error != "" {
		t.Errorf("run: error %q, %d objects, re-lists %+v; want %d pods and a re-list forced through the proxy", res.Error, res.Objects, res.Relists, pods)
	}

	var shards shardReport
	jsonOf(t, &shards, "shard", "--shards", "2", "--failover=false", "--step-timeout", "2m", "--out-dir", t.TempDir())
	if len(shards.Scale) != 1 || len(shards.Scale[0].Replicas) != 2 {
		t.Fatalf("shard: %+v, want one scale step of two replicas", shards)
	}
	if held := shards.Scale[0].Replicas[0].Held + shards.Scale[0].Replicas[1].Held; shards.Pods != pods || held != pods {
		t.Errorf("shard: %d pods, %d held by the replicas; want %d", shards.Pods, held, pods)
	}

	var cleaned seedResult
	jsonOf(t, &cleaned, "seed", "--clean")
	left, err := srv.Clientset().CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if !cleaned.Cleaned || err != nil || len(left.Items) != 0 {
		t.Errorf("seed --clean: %+v; %v, %d pods left", cleaned, err, len(left.Items))
	}
}

// TestCommandsCheckTheServerFirst checks that every command that works on a
// cluster says, in one line, what is wrong before it starts: a user without
// the permissions it needs (a client-certificate user no RBAC rule names), a
// server that does not answer.
func TestCommandsCheckTheServerFirst(t *testing.T) {
	if srv == nil {
		t.Skip("needs the local kube-apiserver")
	}
	leakcheck.Check(t)
	restricted := certKubeconfig(t, certRestrictedContext)
	unreachable := kubeconfigFor(t, apiserver.AdminUser, "https://127.0.0.1:1")
	ns := srv.NewNamespace(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"seed", "--kubeconfig", restricted, "-n", ns, "--pods", "1"}, "forbidden: " + certRestrictedUser + " may not create namespaces, patch namespaces, create pods in namespace " + ns},
		{[]string{"seed", "--kubeconfig", restricted, "-n", ns, "--clean"}, "forbidden: " + certRestrictedUser + " may not list pods in namespace " + ns},
		{[]string{"shard", "--kubeconfig", restricted, "-n", ns}, "forbidden: " + certRestrictedUser + " may not list pods in namespace " + ns},
		{[]string{"run", "--kubeconfig", restricted, "-n", ns}, "forbidden: " + certRestrictedUser + " may not list pods in namespace " + ns},
		{[]string{"seed", "--kubeconfig", unreachable}, "cannot reach the cluster at https://127.0.0.1:1"},
		{[]string{"shard", "--kubeconfig", unreachable}, "cannot reach the cluster at https://127.0.0.1:1"},
		{[]string{"doctor", "--kubeconfig", unreachable}, "cannot reach the cluster at https://127.0.0.1:1"},
	} {
		args := tc.args
		if args[0] == "run" || args[0] == "shard" {
			args = append(args, "--out-dir", t.TempDir()) // not the working directory, should they write
		}
		code, stdout, stderr := cachebench(t, args...)
		if lines := strings.Split(strings.TrimSpace(stderr), "\n"); code != 1 || len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit 1 and one line containing %q", tc.args, code, stderr, tc.want)
		}
		if stdout != "" {
			t.Errorf("%v: stdout %q, want nothing", tc.args, stdout)
		}
	}
}
