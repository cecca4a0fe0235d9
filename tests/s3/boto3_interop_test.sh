#!/usr/bin/env bash
# boto3 (Debian's python3-boto3, an independent SigV4 signer) against dataflux-emulator's S3
# API: its signatures are accepted and a wrong secret is rejected with SignatureDoesNotMatch.
# Then our own client runs its S3 integration tests against the same emulator process, so
# both signers agree with one verifier. Exit 77 (skipped) where python3-boto3 is missing.
#   usage: boto3_interop_test.sh PATH/TO/dataflux-emulator PATH/TO/s3_tests
set -euo pipefail
emulator=$1
s3_tests=$2
python=/usr/bin/python3
if ! "$python" -c 'import boto3' 2>/dev/null; then
  echo "SKIPPED: python3-boto3 is not installed (apt-get install python3-boto3)"
  exit 77
fi
work=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# Fresh keys for this run only (never printed).
key="AKIA$(head -c 64 /dev/urandom | tr -dc 'A-Z2-7' | head -c 16)"
secret=$(head -c 96 /dev/urandom | tr -dc 'A-Za-z0-9/+' | head -c 40)
printf '%s:%s\n' "$key" "$secret" > "$work/keys"
chmod 600 "$work/keys"
"$emulator" --port 0 --s3-keys "$work/keys" --s3-require-signature > "$work/url" 2> "$work/log" &
pid=$!
for _ in $(seq 100); do
  [ -s "$work/url" ] && break
  sleep 0.05
done
url=$(head -1 "$work/url")
case "$url" in http://127.0.0.1:*) ;; *) echo "emulator did not start"; cat "$work/log"; exit 1 ;; esac

AWS_ACCESS_KEY_ID="$key" AWS_SECRET_ACCESS_KEY="$secret" ENDPOINT="$url" "$python" - <<'PY'
import hashlib, os, sys
import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

endpoint = os.environ["ENDPOINT"]
cfg = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
             signature_version="s3v4")
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", config=cfg)
bucket = "boto3-interop"
s3.create_bucket(Bucket=bucket)
body = os.urandom(200_000)
s3.put_object(Bucket=bucket, Key="dir/a b+c.bin", Body=body, ContentType="application/x-test")
got = s3.get_object(Bucket=bucket, Key="dir/a b+c.bin")["Body"].read()
assert got == body, "GET returned other bytes"
part = s3.get_object(Bucket=bucket, Key="dir/a b+c.bin", Range="bytes=100-199")
assert part["ContentRange"] == "bytes 100-199/200000", part["ContentRange"]
assert part["Body"].read() == body[100:200]
head = s3.head_object(Bucket=bucket, Key="dir/a b+c.bin")
assert head["ContentLength"] == len(body)
assert head["ETag"].strip('"') == hashlib.md5(body).hexdigest()
for i in range(5):
    s3.put_object(Bucket=bucket, Key=f"list/{i}", Body=b"x")
s3.put_object(Bucket=bucket, Key="list/sub/y", Body=b"y")
page = s3.list_objects_v2(Bucket=bucket, Prefix="list/", Delimiter="/", MaxKeys=3)
assert [o["Key"] for o in page["Contents"]] == ["list/0", "list/1", "list/2"], page
assert page["IsTruncated"]
rest = s3.list_objects_v2(Bucket=bucket, Prefix="list/", Delimiter="/",
                          ContinuationToken=page["NextContinuationToken"])
assert [o["Key"] for o in rest["Contents"]] == ["list/3", "list/4"], rest
assert [p["Prefix"] for p in rest.get("CommonPrefixes", [])] == ["list/sub/"], rest
after = s3.list_objects_v2(Bucket=bucket, Prefix="list/", StartAfter="list/3")
assert [o["Key"] for o in after["Contents"]] == ["list/4", "list/sub/y"], after
s3.copy_object(Bucket=bucket, Key="copy", CopySource={"Bucket": bucket, "Key": "list/0"})
assert s3.get_object(Bucket=bucket, Key="copy")["Body"].read() == b"x"
deleted = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": f"list/{i}"} for i in range(5)]})
assert len(deleted.get("Deleted", [])) == 5, deleted
# Multipart: a 5 MiB part and a tail.
mpu = s3.create_multipart_upload(Bucket=bucket, Key="mpu")
p1 = os.urandom(5 << 20)
p2 = os.urandom(1000)
e1 = s3.upload_part(Bucket=bucket, Key="mpu", UploadId=mpu["UploadId"], PartNumber=1, Body=p1)["ETag"]
e2 = s3.upload_part(Bucket=bucket, Key="mpu", UploadId=mpu["UploadId"], PartNumber=2, Body=p2)["ETag"]
s3.complete_multipart_upload(Bucket=bucket, Key="mpu", UploadId=mpu["UploadId"],
                             MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1},
                                                        {"PartNumber": 2, "ETag": e2}]})
assert s3.get_object(Bucket=bucket, Key="mpu")["Body"].read() == p1 + p2
# Unfinished uploads are listed (as cleanup lists them), by prefix, and gone once aborted.
left = s3.create_multipart_upload(Bucket=bucket, Key="crashed/save.pt")
s3.upload_part(Bucket=bucket, Key="crashed/save.pt", UploadId=left["UploadId"], PartNumber=1,
               Body=b"part")
listed = s3.list_multipart_uploads(Bucket=bucket, Prefix="crashed/")
assert [(u["Key"], u["UploadId"]) for u in listed["Uploads"]] == \
    [("crashed/save.pt", left["UploadId"])], listed
assert "Initiated" in listed["Uploads"][0], listed
s3.abort_multipart_upload(Bucket=bucket, Key="crashed/save.pt", UploadId=left["UploadId"])
assert not s3.list_multipart_uploads(Bucket=bucket, Prefix="crashed/").get("Uploads"), "not aborted"
try:
    s3.get_object(Bucket=bucket, Key="missing")
    sys.exit("GET of a missing key succeeded")
except ClientError as e:
    assert e.response["Error"]["Code"] == "NoSuchKey", e.response

# A wrong secret is rejected, for reads and for writes.
bad = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", config=cfg,
                   aws_access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
                   aws_secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"] + "x")
for call in (lambda: bad.list_objects_v2(Bucket=bucket),
             lambda: bad.put_object(Bucket=bucket, Key="evil", Body=b"no")):
    try:
        call()
        sys.exit("a request signed with the wrong secret was accepted")
    except ClientError as e:
        assert e.response["Error"]["Code"] == "SignatureDoesNotMatch", e.response
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 403
try:
    s3.head_object(Bucket=bucket, Key="evil")
    sys.exit("the rejected PUT stored an object")
except ClientError as e:
    assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 404
print("boto3: signatures accepted, wrong secret rejected, all operations agree")
PY

# Our client against the same emulator process and keys.
DATAFLUX_S3_TEST_ENDPOINT="$url" DATAFLUX_S3_TEST_ACCESS_KEY_ID="$key" \
DATAFLUX_S3_TEST_SECRET_ACCESS_KEY="$secret" "$s3_tests" --gtest_filter='S3StoreTest.*' --gtest_brief=1
echo "dataflux client: S3StoreTest passed against the same endpoint"
