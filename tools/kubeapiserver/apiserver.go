package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"time"
)

// apiserverArgs is the kube-apiserver command line. There is no controller manager,
// so admission plugins that need one are off: ServiceAccount would reject every Pod
// because no "default" ServiceAccount is ever created.
func apiserverArgs(dir string, c *credentials, etcdPort, securePort int) []string {
	return []string{
		"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(etcdPort),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(securePort),
		"--cert-dir=" + filepath.Join(dir, "certs"),
		"--tls-cert-file=" + c.certFile,
		"--tls-private-key-file=" + c.keyFile,
		"--client-ca-file=" + c.caFile,
		"--token-auth-file=" + c.tokenFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + c.saKeyFile,
		"--service-account-signing-key-file=" + c.saKeyFile,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--disable-admission-plugins=ServiceAccount",
		"--endpoint-reconciler-type=none",
		"--allow-privileged=true",
		"--v=0",
	}
}

// waitReady polls /readyz with the admin token until it answers 200, the API server
// exits, or ctx ends.
func waitReady(ctx context.Context, c *credentials, apiDone <-chan error) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.caPEM)
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
	defer client.CloseIdleConnections()
	last := "no answer yet"
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.host+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+c.adminToken)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case err := <-apiDone:
			return fmt.Errorf("kube-apiserver exited before it was ready: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready: %s", last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
