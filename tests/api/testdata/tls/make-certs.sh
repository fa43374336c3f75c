#!/bin/sh
# Writes the TLS material the extender-listener tests use (tests/api/extender_tls_test.cc), valid
# for 100 years so that the committed files do not expire: a CA, the server's certificate for
# 127.0.0.1/localhost, a client certificate signed by that CA (kube-scheduler's), and a client
# certificate signed by another CA (must be refused). Run from this directory; needs openssl.
set -eu
days=36500
openssl req -x509 -newkey rsa:2048 -nodes -days $days -subj "/CN=toposched test CA" \
  -keyout ca.key -out ca.crt 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -days $days -subj "/CN=another CA" \
  -keyout other-ca.key -out other-ca.crt 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > server.ext
printf 'extendedKeyUsage=clientAuth\n' > client.ext
openssl req -newkey rsa:2048 -nodes -subj "/CN=toposched" -keyout server.key -out server.csr 2>/dev/null
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days $days \
  -extfile server.ext -out server.crt 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-scheduler" -keyout client.key -out client.csr 2>/dev/null
openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days $days \
  -extfile client.ext -out client.crt 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=intruder" -keyout rogue.key -out rogue.csr 2>/dev/null
openssl x509 -req -in rogue.csr -CA other-ca.crt -CAkey other-ca.key -CAcreateserial -days $days \
  -extfile client.ext -out rogue.crt 2>/dev/null
rm -f ./*.csr ./*.ext ./*.srl other-ca.key ca.key
