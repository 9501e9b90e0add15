package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The two identities written into the kubeconfig. The admin is in system:masters;
// the restricted user belongs to no group but system:authenticated, so RBAC denies
// it everything that a test does not grant explicitly.
const (
	AdminUser      = "cachetune-admin"
	RestrictedUser = "cachetune-restricted"
)

type credentials struct {
	host            string
	caPEM           []byte
	caFile          string
	certFile        string
	keyFile         string
	saKeyFile       string
	tokenFile       string
	adminToken      string
	restrictedToken string
}

// writeCredentials creates a CA, a serving certificate for 127.0.0.1, a
// service-account signing key and a static token file under dir.
func writeCredentials(dir string, port int) (*credentials, error) {
	pki := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return nil, err
	}
	c := &credentials{
		host:      "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		caFile:    filepath.Join(pki, "ca.crt"),
		certFile:  filepath.Join(pki, "apiserver.crt"),
		keyFile:   filepath.Join(pki, "apiserver.key"),
		saKeyFile: filepath.Join(pki, "service-account.key"),
		tokenFile: filepath.Join(pki, "tokens.csv"),
	}

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "cachetune-local-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create CA: %w", err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	c.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})

	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create serving certificate: %w", err)
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}

	c.adminToken = randomToken()
	c.restrictedToken = randomToken()
	tokens := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n%s,%s,%s\n",
		c.adminToken, AdminUser, AdminUser, c.restrictedToken, RestrictedUser, RestrictedUser)

	files := map[string][]byte{
		c.caFile:    c.caPEM,
		c.certFile:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}),
		c.keyFile:   ecKeyPEM(srvKey),
		c.saKeyFile: ecKeyPEM(saKey),
		c.tokenFile: []byte(tokens),
	}
	for name, data := range files {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func ecKeyPEM(k *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		panic(err) // only fails for unsupported curves; P-256 is supported
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// writeKubeconfig writes a kubeconfig whose current context is the admin and whose
// second context, named after RestrictedUser, uses the restricted identity.
func writeKubeconfig(path string, c *credentials) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: c.host, CertificateAuthorityData: c.caPEM}
	cfg.AuthInfos[AdminUser] = &clientcmdapi.AuthInfo{Token: c.adminToken}
	cfg.AuthInfos[RestrictedUser] = &clientcmdapi.AuthInfo{Token: c.restrictedToken}
	cfg.Contexts[AdminUser] = &clientcmdapi.Context{Cluster: "local", AuthInfo: AdminUser, Namespace: "default"}
	cfg.Contexts[RestrictedUser] = &clientcmdapi.Context{Cluster: "local", AuthInfo: RestrictedUser, Namespace: "default"}
	cfg.CurrentContext = AdminUser
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}
