#!/usr/bin/env bash
# Makes the certificates the TLS tests use, in DIR, with the openssl command (P-256 keys, made in
# well under a second). Nothing here is trusted outside the tests: every authority is new.
#   ca.pem            the authority the tests trust; it signed:
#   server.pem        the server's (server.key): for 127.0.0.1, ::1 and localhost
#   expired.pem       the same, expired yesterday (server.key)
#   wrong-host.pem    the same key, for elsewhere.example only (server.key)
#   client.pem        a client's (client.key), for mutual TLS
#   other-ca.pem      an authority nobody trusts; it signed:
#   outsider.pem      a client's (outsider.key)
set -euo pipefail
dir=${1:?usage: make_test_certificates.sh DIR}
mkdir -p "$dir"
cd "$dir"

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
authority() {  # NAME CN
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -out "$1.pem" -days 2 -subj "/CN=$2" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
}
signed() {  # OUT KEY CA DAYS CN EXTENSIONS
  openssl req -new -key "$2" -subj "/CN=$5" -out "$1.csr"
  printf '%s\n' "$6" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3.key" -CAcreateserial -days "$4" \
    -extfile "$1.ext" -out "$1.pem" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}

serving='extendedKeyUsage=serverAuth'
authority ca "sonic test authority"
authority other-ca "sonic test outsider authority"
key server.key
key client.key
key outsider.key
signed server server.key ca 2 localhost \
  "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost
$serving"
signed expired server.key ca -1 localhost \
  "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost
$serving"
signed wrong-host server.key ca 2 elsewhere.example \
  "subjectAltName=DNS:elsewhere.example
$serving"
signed client client.key ca 2 "sonic test client" 'extendedKeyUsage=clientAuth'
signed outsider outsider.key other-ca 2 "sonic test outsider" 'extendedKeyUsage=clientAuth'
