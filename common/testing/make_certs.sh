#!/usr/bin/env bash
# Makes a throwaway CA and certificates for rein's mTLS under DIR (for ./dev up --tls and tests).
#   DIR/ca.pem                       the CA (--tls_ca of every service and client)
#   DIR/{router,planner,executor,client}.{pem,key}
#                                    signed by the CA; SANs localhost, 127.0.0.1 and rein-NAME:
#                                    the identity of each role (executors and planners take
#                                    calls only from rein-router, docs/SECURITY.md)
#   DIR/clients-ca.pem               a CA of its own for public clients (the router's --client_ca)
#   DIR/public-client.{pem,key}      signed by clients-ca; SAN rein-client
# With --test, also:
#   DIR/wrongname.{pem,key}          signed by the CA, SAN only elsewhere.invalid
#   DIR/{planner,executor}-next.{pem,key}  renewals signed by the same CA
#   DIR/expired.{pem,key}            signed by the CA, valid only in January 2020
#   DIR/other-ca.pem, DIR/stranger.{pem,key}  a second CA and a certificate it signed
# Keys are unencrypted EC P-256; certificates are valid 30 days.
set -euo pipefail
dir="${1:?usage: make_certs.sh DIR [--test]}"
test_extras="${2:-}"
mkdir -p "$dir"
cd "$dir"

ca() {  # NAME: a self-signed CA
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" \
    -out "$1.pem" -days 30 -subj "/CN=rein test $1" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
    2>/dev/null
}

leaf() {  # NAME CA SAN: a certificate signed by CA, for servers and clients
  local name="$1" ca="$2" san="$3"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$name.key" \
    -out "$name.csr" -subj "/CN=$name" 2>/dev/null
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n' \
    "$san" >"$name.ext"
  openssl x509 -req -in "$name.csr" -CA "$ca.pem" -CAkey "$ca.key" -CAcreateserial \
    -out "$name.pem" -days 30 -extfile "$name.ext" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
}

ca ca
for name in router planner executor client; do
  leaf "$name" ca "DNS:localhost,IP:127.0.0.1,DNS:rein-$name"
done
# One CA per role: public clients' certificates come from a CA the services never trust.
ca clients-ca
leaf public-client clients-ca "DNS:rein-client"

if [[ "$test_extras" == "--test" ]]; then
  leaf wrongname ca "DNS:elsewhere.invalid"
  # Renewed certificates from the same CA, to rotate to.
  leaf planner-next ca "DNS:localhost,IP:127.0.0.1,DNS:rein-planner"
  leaf executor-next ca "DNS:localhost,IP:127.0.0.1,DNS:rein-executor"
  ca other-ca
  leaf stranger other-ca "DNS:localhost,IP:127.0.0.1"
  # An expired certificate: `openssl ca` is the tool that takes explicit dates.
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout expired.key \
    -out expired.csr -subj "/CN=expired" 2>/dev/null
  mkdir -p ca-db && : >ca-db/index.txt && echo 01 >ca-db/serial
  cat >ca-db/openssl.cnf <<CONF
[ca]
default_ca = test
[test]
database = ca-db/index.txt
serial = ca-db/serial
new_certs_dir = ca-db
default_md = sha256
policy = any
copy_extensions = none
[any]
commonName = supplied
[ext]
subjectAltName = DNS:localhost,IP:127.0.0.1
extendedKeyUsage = serverAuth,clientAuth
CONF
  openssl ca -batch -config ca-db/openssl.cnf -cert ca.pem -keyfile ca.key -in expired.csr \
    -out expired.pem -startdate 20200101000000Z -enddate 20200131000000Z -extensions ext \
    -notext 2>/dev/null
  rm -rf expired.csr ca-db
fi
chmod 600 ./*.key
