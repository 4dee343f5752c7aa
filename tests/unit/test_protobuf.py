"""Tests for pykcm.api.protobuf (decoding) and pykcm.api.protobuf_encode.

The fixtures are request bodies captured from real ``kubectl`` v1.37 typed
creates (sent as ``application/vnd.kubernetes.protobuf``) against a logging
HTTP server, each paired with the JSON the same kubectl printed for
``--dry-run=client -o json`` (Go struct -> JSON of the very same object).
"""

from __future__ import annotations

import base64
import json
import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykcm.api.protobuf import (
    F_INLINE,
    F_MAP,
    F_OMITEMPTY,
    F_POINTER,
    F_REPEATED,
    K8S_PROTOBUF_MAGIC,
    K_BOOL,
    K_BYTES,
    K_DUR,
    K_F64,
    K_FV1,
    K_I32,
    K_I64,
    K_IOS,
    K_MSG,
    K_MTIME,
    K_QTY,
    K_RAW,
    K_STR,
    K_TIME,
    K_U32,
    K_U64,
    Message,
    ProtobufDecodeError,
    ProtobufUnsupportedKindError,
    decode_k8s_protobuf,
    format_go_duration,
    is_k8s_protobuf,
    load_schema,
)
from pykcm.api.protobuf_encode import (
    ProtobufEncodeError,
    encode_k8s_protobuf,
    parse_go_duration,
)
from pykcm.api.timestamps import format_unix

# name -> (request path, base64 body, expected JSON or None when kubectl has no dry run)
KUBECTL_BODIES: dict[str, tuple[str, str, str | None]] = {
    "namespace": (
        "/api/v1/namespaces",
        "azhzAAoPCgJ2MRIJTmFtZXNwYWNlEhsKEwoDZm9vEgAaACIAKgAyADgAQgASABoCCgAaACIA",
        ('{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"foo"},"spec":{},"status":{}}'),
    ),
    "configmap": (
        "/api/v1/namespaces/default/configmaps",
        "azhzAAoPCgJ2MRIJQ29uZmlnTWFwEhsKEQoBYxIAGgAiACoAMgA4AEIAEgYKAWESAWIaACIA",
        '{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c"},"data":{"a":"b"}}',
    ),
    "configmap_files": (
        "/api/v1/namespaces/default/configmaps",
        (
            "azhzAAoPCgJ2MRIJQ29uZmlnTWFwEkMKEgoCY2YSABoAIgAqADIAOABCABIGCgFrEgF2EhIKCHRleHQudHh0"
            "EgZoZWxsbwoaEQoHYmluLmRhdBIG/wABYmluGgAiAA=="
        ),
        (
            '{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cf"},"data":{"k":"v","text'
            '.txt":"hello\\n"},"binaryData":{"bin.dat":"/wABYmlu"}}'
        ),
    ),
    "secret": (
        "/api/v1/namespaces/default/secrets",
        "azhzAAoMCgJ2MRIGU2VjcmV0Eh0KEQoBcxIAGgAiACoAMgA4AEIAEgYKAWESAWIaABoAIgA=",
        '{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s"},"data":{"a":"Yg=="}}',
    ),
    "secret_docker": (
        "/api/v1/namespaces/default/secrets",
        (
            "azhzAAoMCgJ2MRIGU2VjcmV0Ep8BChMKA3JlZxIAGgAiACoAMgA4AEIAEmgKES5kb2NrZXJjb25maWdqc29u"
            "ElN7ImF1dGhzIjp7InIuZXhhbXBsZSI6eyJ1c2VybmFtZSI6InUiLCJwYXNzd29yZCI6InAiLCJlbWFpbCI6"
            "ImVAeCIsImF1dGgiOiJkVHB3In19fRoea3ViZXJuZXRlcy5pby9kb2NrZXJjb25maWdqc29uGgAiAA=="
        ),
        (
            '{"kind":"Secret","apiVersion":"v1","metadata":{"name":"reg"},"data":{".dockerconfigj'
            'son":"eyJhdXRocyI6eyJyLmV4YW1wbGUiOnsidXNlcm5hbWUiOiJ1IiwicGFzc3dvcmQiOiJwIiwiZW1haW'
            'wiOiJlQHgiLCJhdXRoIjoiZFRwdyJ9fX0="},"type":"kubernetes.io/dockerconfigjson"}'
        ),
    ),
    "deployment": (
        "/apis/apps/v1/namespaces/default/deployments",
        (
            "azhzAAoVCgdhcHBzL3YxEgpEZXBsb3ltZW50EqMBChsKAWQSABoAIgAqADIAOABCAFoICgNhcHASAWQSdggA"
            "EgoKCAoDYXBwEgFkGl4KGgoAEgAaACIAKgAyADgAQgBaCAoDYXBwEgFkEkASIgoFbmdpbngSBW5naW54KgBC"
            "AGoAcgCAAQCIAQCQAQCiAQAaADIAQgBKAFIAWABgAGgAggEAigEAmgEAwgEAIgIKACgAOAAaDAgAEAAYACAA"
            "KAA4ABoAIgA="
        ),
        (
            '{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"d","labels":{"app":"'
            'd"}},"spec":{"replicas":0,"selector":{"matchLabels":{"app":"d"}},"template":{"metada'
            'ta":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"nginx","image":"nginx","re'
            'sources":{}}]}},"strategy":{}},"status":{}}'
        ),
    ),
    "deployment_port": (
        "/apis/apps/v1/namespaces/default/deployments",
        (
            "azhzAAoVCgdhcHBzL3YxEgpEZXBsb3ltZW50EucBCh8KA3dlYhIAGgAiACoAMgA4AEIAWgoKA2FwcBIDd2Vi"
            "ErUBCAMSDAoKCgNhcHASA3dlYhqaAQocCgASABoAIgAqADIAOABCAFoKCgNhcHASA3dlYhJ6EjQKBW5naW54"
            "EgpuZ2lueDoxLjI3KgAyCwoAEAAYkD8iACoAQgBqAHIAgAEAiAEAkAEAogEAEiYKB2J1c3lib3gSB2J1c3li"
            "b3gqAEIAagByAIABAIgBAJABAKIBABoAMgBCAEoAUgBYAGAAaACCAQCKAQCaAQDCAQAiAgoAKAA4ABoMCAAQ"
            "ABgAIAAoADgAGgAiAA=="
        ),
        (
            '{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"web","labels":{"app"'
            ':"web"}},"spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},"template":{"'
            'metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"nginx","image":"ng'
            'inx:1.27","ports":[{"containerPort":8080}],"resources":{}},{"name":"busybox","image"'
            ':"busybox","resources":{}}]}},"strategy":{}},"status":{}}'
        ),
    ),
    "job": (
        "/apis/batch/v1/namespaces/default/jobs",
        (
            "azhzAAoPCghiYXRjaC92MRIDSm9iEngKEQoBahIAGgAiACoAMgA4AEIAElkyVwoQCgASABoAIgAqADIAOABC"
            "ABJDEiAKAWoSB2J1c3lib3gqAEIAagByAIABAIgBAJABAKIBABoFTmV2ZXIyAEIASgBSAFgAYABoAIIBAIoB"
            "AJoBAMIBABoIIAAoADAAOgAaACIA"
        ),
        (
            '{"kind":"Job","apiVersion":"batch/v1","metadata":{"name":"j"},"spec":{"template":{"m'
            'etadata":{},"spec":{"containers":[{"name":"j","image":"busybox","resources":{}}],"re'
            'startPolicy":"Never"}}},"status":{}}'
        ),
    ),
    "job_cmd": (
        "/apis/batch/v1/namespaces/default/jobs",
        (
            "azhzAAoPCghiYXRjaC92MRIDSm9iEpMBChIKAmpjEgAaACIAKgAyADgAQgASczJxChAKABIAGgAiACoAMgA4"
            "AEIAEl0SOgoCamMSB2J1c3lib3gaAnNoGgItYxoPZWNobyBoaTsgZXhpdCAzKgBCAGoAcgCAAQCIAQCQAQCi"
            "AQAaBU5ldmVyMgBCAEoAUgBYAGAAaACCAQCKAQCaAQDCAQAaCCAAKAAwADoAGgAiAA=="
        ),
        (
            '{"kind":"Job","apiVersion":"batch/v1","metadata":{"name":"jc"},"spec":{"template":{"'
            'metadata":{},"spec":{"containers":[{"name":"jc","image":"busybox","command":["sh","-'
            'c","echo hi; exit 3"],"resources":{}}],"restartPolicy":"Never"}}},"status":{}}'
        ),
    ),
    "service": (
        "/api/v1/namespaces/default/services",
        (
            "azhzAAoNCgJ2MRIHU2VydmljZRJjChsKAXMSABoAIgAqADIAOABCAFoICgNhcHASAXMSQAobCgc4MC04MDgw"
            "EgNUQ1AYUCIHCAAQkD8aACgAEggKA2FwcBIBcxoAIglDbHVzdGVySVA6AEIAUgBaAGAAaAAaAgoAGgAiAA=="
        ),
        (
            '{"kind":"Service","apiVersion":"v1","metadata":{"name":"s","labels":{"app":"s"}},"sp'
            'ec":{"ports":[{"name":"80-8080","protocol":"TCP","port":80,"targetPort":8080}],"sele'
            'ctor":{"app":"s"},"type":"ClusterIP"},"status":{"loadBalancer":{}}}'
        ),
    ),
    "service_nodeport": (
        "/api/v1/namespaces/default/services",
        (
            "azhzAAoNCgJ2MRIHU2VydmljZRJqCh0KAm5wEgAaACIAKgAyADgAQgBaCQoDYXBwEgJucBJFCiAKCTU2Nzgt"
            "ODA4MBIDVENQGK4sIgcIABCQPxoAKIDrARIJCgNhcHASAm5wGgAiCE5vZGVQb3J0OgBCAFIAWgBgAGgAGgIK"
            "ABoAIgA="
        ),
        (
            '{"kind":"Service","apiVersion":"v1","metadata":{"name":"np","labels":{"app":"np"}},"'
            'spec":{"ports":[{"name":"5678-8080","protocol":"TCP","port":5678,"targetPort":8080,"'
            'nodePort":30080}],"selector":{"app":"np"},"type":"NodePort"},"status":{"loadBalancer'
            '":{}}}'
        ),
    ),
    "service_lb": (
        "/api/v1/namespaces/default/services",
        (
            "azhzAAoNCgJ2MRIHU2VydmljZRJwCh0KAmxiEgAaACIAKgAyADgAQgBaCQoDYXBwEgJsYhJLCiIKCTQ0My1o"
            "dHRwcxIDVENQGLsDIgsIARAAGgVodHRwcygAEgkKA2FwcBICbGIaACIMTG9hZEJhbGFuY2VyOgBCAFIAWgBg"
            "AGgAGgIKABoAIgA="
        ),
        (
            '{"kind":"Service","apiVersion":"v1","metadata":{"name":"lb","labels":{"app":"lb"}},"'
            'spec":{"ports":[{"name":"443-https","protocol":"TCP","port":443,"targetPort":"https"'
            '}],"selector":{"app":"lb"},"type":"LoadBalancer"},"status":{"loadBalancer":{}}}'
        ),
    ),
    "service_external": (
        "/api/v1/namespaces/default/services",
        (
            "azhzAAoNCgJ2MRIHU2VydmljZRJaCh8KA2V4dBIAGgAiACoAMgA4AEIAWgoKA2FwcBIDZXh0EjMSCgoDYXBw"
            "EgNleHQaACIMRXh0ZXJuYWxOYW1lOgBCAFILZXhhbXBsZS5jb21aAGAAaAAaAgoAGgAiAA=="
        ),
        (
            '{"kind":"Service","apiVersion":"v1","metadata":{"name":"ext","labels":{"app":"ext"}}'
            ',"spec":{"selector":{"app":"ext"},"type":"ExternalName","externalName":"example.com"'
            '},"status":{"loadBalancer":{}}}'
        ),
    ),
    "service_headless": (
        "/api/v1/namespaces/default/services",
        (
            "azhzAAoNCgJ2MRIHU2VydmljZRJNCh0KAmhsEgAaACIAKgAyADgAQgBaCQoDYXBwEgJobBIoEgkKA2FwcBIC"
            "aGwaBE5vbmUiCUNsdXN0ZXJJUDoAQgBSAFoAYABoABoCCgAaACIA"
        ),
        (
            '{"kind":"Service","apiVersion":"v1","metadata":{"name":"hl","labels":{"app":"hl"}},"'
            'spec":{"selector":{"app":"hl"},"clusterIP":"None","type":"ClusterIP"},"status":{"loa'
            'dBalancer":{}}}'
        ),
    ),
    "cronjob": (
        "/apis/batch/v1/namespaces/default/cronjobs",
        (
            "azhzAAoTCghiYXRjaC92MRIHQ3JvbkpvYhKUAQoRCgFjEgAaACIAKgAyADgAQgASfQoLKi8xICogKiAqICoa"
            "ACpsChEKAWMSABoAIgAqADIAOABCABJXMlUKEAoAEgAaACIAKgAyADgAQgASQRIaCgFjEgF4KgBCAGoAcgCA"
            "AQCIAQCQAQCiAQAaCU9uRmFpbHVyZTIAQgBKAFIAWABgAGgAggEAigEAmgEAwgEAGgAaACIA"
        ),
        (
            '{"kind":"CronJob","apiVersion":"batch/v1","metadata":{"name":"c"},"spec":{"schedule"'
            ':"*/1 * * * *","jobTemplate":{"metadata":{"name":"c"},"spec":{"template":{"metadata"'
            ':{},"spec":{"containers":[{"name":"c","image":"x","resources":{}}],"restartPolicy":"'
            'OnFailure"}}}}},"status":{}}'
        ),
    ),
    "cronjob_cmd": (
        "/apis/batch/v1/namespaces/default/cronjobs",
        (
            "azhzAAoTCghiYXRjaC92MRIHQ3JvbkpvYhKeAQoSCgJjYxIAGgAiACoAMgA4AEIAEoUBCgkwIDAgKiAqICoa"
            "ACp2ChIKAmNjEgAaACIAKgAyADgAQgASYDJeChAKABIAGgAiACoAMgA4AEIAEkoSJwoCY2MSB2J1c3lib3ga"
            "BGRhdGUqAEIAagByAIABAIgBAJABAKIBABoFTmV2ZXIyAEIASgBSAFgAYABoAIIBAIoBAJoBAMIBABoAGgAi"
            "AA=="
        ),
        (
            '{"kind":"CronJob","apiVersion":"batch/v1","metadata":{"name":"cc"},"spec":{"schedule'
            '":"0 0 * * *","jobTemplate":{"metadata":{"name":"cc"},"spec":{"template":{"metadata"'
            ':{},"spec":{"containers":[{"name":"cc","image":"busybox","command":["date"],"resourc'
            'es":{}}],"restartPolicy":"Never"}}}}},"status":{}}'
        ),
    ),
    "serviceaccount": (
        "/api/v1/namespaces/default/serviceaccounts",
        "azhzAAoUCgJ2MRIOU2VydmljZUFjY291bnQSFAoSCgJzYRIAGgAiACoAMgA4AEIAGgAiAA==",
        '{"kind":"ServiceAccount","apiVersion":"v1","metadata":{"name":"sa"}}',
    ),
    "quota": (
        "/api/v1/namespaces/default/resourcequotas",
        (
            "azhzAAoTCgJ2MRINUmVzb3VyY2VRdW90YRJsChEKAXESABoAIgAqADIAOABCABJVCg4KA2NwdRIHCgUxNTAw"
            "bQoPCgZtZW1vcnkSBQoDMUdpCgsKBHBvZHMSAwoBMgoZChByZXF1ZXN0cy5zdG9yYWdlEgUKAzEwRxIKQmVz"
            "dEVmZm9ydBoAGgAiAA=="
        ),
        (
            '{"kind":"ResourceQuota","apiVersion":"v1","metadata":{"name":"q"},"spec":{"hard":{"c'
            'pu":"1500m","memory":"1Gi","pods":"2","requests.storage":"10G"},"scopes":["BestEffor'
            't"]},"status":{}}'
        ),
    ),
    "pdb": (
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
        (
            "azhzAAogCglwb2xpY3kvdjESE1BvZERpc3J1cHRpb25CdWRnZXQSOgoTCgNwZGISABoAIgAqADIAOABCABIX"
            "CgkIARAAGgM1MCUSCgoICgNhcHASAXgaCggAGAAgACgAMAAaACIA"
        ),
        (
            '{"kind":"PodDisruptionBudget","apiVersion":"policy/v1","metadata":{"name":"pdb"},"sp'
            'ec":{"minAvailable":"50%","selector":{"matchLabels":{"app":"x"}}},"status":{"disrupt'
            'ionsAllowed":0,"currentHealthy":0,"desiredHealthy":0,"expectedPods":0}}'
        ),
    ),
    "pdb_int": (
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
        (
            "azhzAAogCglwb2xpY3kvdjESE1BvZERpc3J1cHRpb25CdWRnZXQSSgoUCgRwZGIyEgAaACIAKgAyADgAQgAS"
            "JhIcCggKA2FwcBIBeRIQCgR0aWVyEgJJbhoBYRoBYhoGCAAQARoAGgoIABgAIAAoADAAGgAiAA=="
        ),
        (
            '{"kind":"PodDisruptionBudget","apiVersion":"policy/v1","metadata":{"name":"pdb2"},"s'
            'pec":{"selector":{"matchLabels":{"app":"y"},"matchExpressions":[{"key":"tier","opera'
            'tor":"In","values":["a","b"]}]},"maxUnavailable":1},"status":{"disruptionsAllowed":0'
            ',"currentHealthy":0,"desiredHealthy":0,"expectedPods":0}}'
        ),
    ),
    "priorityclass": (
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        (
            "azhzAAolChRzY2hlZHVsaW5nLms4cy5pby92MRINUHJpb3JpdHlDbGFzcxIzChQKBGhpZ2gSABoAIgAqADIA"
            "OABCABDoBxgAIgAqFFByZWVtcHRMb3dlclByaW9yaXR5GgAiAA=="
        ),
        (
            '{"kind":"PriorityClass","apiVersion":"scheduling.k8s.io/v1","metadata":{"name":"high'
            '"},"value":1000,"preemptionPolicy":"PreemptLowerPriority"}'
        ),
    ),
    "token": (
        "/api/v1/namespaces/default/serviceaccounts/sa/token",
        (
            "azhzAAooChhhdXRoZW50aWNhdGlvbi5rOHMuaW8vdjESDFRva2VuUmVxdWVzdBIaChAKABIAGgAiACoAMgA4"
            "AEIAEgAaBAoAEgAaACIA"
        ),
        ('{"kind":"TokenRequest","apiVersion":"authentication.k8s.io/v1","metadata":{},'
         '"spec":{"audiences":null,"expirationSeconds":null,"boundObjectRef":null},'
         '"status":{"token":"","expirationTimestamp":null}}'),
    ),
}

DECODABLE = sorted(KUBECTL_BODIES)


def _pb_string(field: int, value: bytes) -> bytes:
    return bytes([field << 3 | 2, len(value)]) + value


# k8s\0 + runtime.Unknown{typeMeta: {apiVersion, kind}, raw: ""} of a kind no table holds
UNKNOWN_KIND_BODY = b"k8s\x00" + _pb_string(1, _pb_string(1, b"example.com/v1")
                                            + _pb_string(2, b"Widget")) + _pb_string(2, b"")


def _body(name: str) -> bytes:
    return base64.b64decode(KUBECTL_BODIES[name][1])


def _expected(name: str) -> Any:
    text = KUBECTL_BODIES[name][2]
    assert text is not None
    return json.loads(text)


# ------------------------------------------------------------ varint helpers (test-only)


def _varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _field(num: int, wt: int, payload: bytes) -> bytes:
    key = _varint(num << 3 | wt)
    if wt == 2:
        return key + _varint(len(payload)) + payload
    return key + payload


def _envelope(api_version: str, kind: str, raw: bytes | None) -> bytes:
    tm = _field(1, 2, api_version.encode()) + _field(2, 2, kind.encode())
    body = _field(1, 2, tm)
    if raw is not None:
        body += _field(2, 2, raw)
    return K8S_PROTOBUF_MAGIC + body + _field(3, 2, b"") + _field(4, 2, b"")


# ------------------------------------------------------------ real kubectl bodies


@pytest.mark.parametrize("name", DECODABLE)
def test_kubectl_body_decodes_to_go_json(name: str) -> None:
    assert decode_k8s_protobuf(_body(name)) == _expected(name)


@pytest.mark.parametrize("name", DECODABLE)
def test_kubectl_body_reencodes_byte_for_byte(name: str) -> None:
    body = _body(name)
    assert encode_k8s_protobuf(decode_k8s_protobuf(body)) == body


def test_kubectl_bodies_cover_the_typed_creates() -> None:
    kinds = {decode_k8s_protobuf(_body(n))["kind"] for n in DECODABLE}
    assert kinds >= {
        "Namespace",
        "ConfigMap",
        "Secret",
        "Deployment",
        "Job",
        "CronJob",
        "Service",
        "ServiceAccount",
        "TokenRequest",
        "ResourceQuota",
        "PodDisruptionBudget",
        "PriorityClass",
    }


def test_unknown_kind_is_a_clear_error() -> None:
    with pytest.raises(ProtobufUnsupportedKindError) as exc:
        decode_k8s_protobuf(UNKNOWN_KIND_BODY)
    assert str(exc.value) == (
        "protobuf decoding of kind Widget (apiVersion example.com/v1) is not supported; send JSON"
    )


def test_quantities_and_int_or_string_from_kubectl() -> None:
    quota = decode_k8s_protobuf(_body("quota"))
    assert quota["spec"]["hard"] == {
        "cpu": "1500m",
        "memory": "1Gi",
        "pods": "2",
        "requests.storage": "10G",
    }
    assert decode_k8s_protobuf(_body("pdb"))["spec"]["minAvailable"] == "50%"
    assert decode_k8s_protobuf(_body("pdb_int"))["spec"]["maxUnavailable"] == 1
    svc = decode_k8s_protobuf(_body("service_lb"))
    assert svc["spec"]["ports"][0]["targetPort"] == "https"


def test_binary_data_is_base64() -> None:
    cm = decode_k8s_protobuf(_body("configmap_files"))
    assert base64.b64decode(cm["binaryData"]["bin.dat"]) == b"\xff\x00\x01bin"
    assert cm["data"]["text.txt"] == "hello\n"


# ------------------------------------------------------------ content type


@pytest.mark.parametrize(
    ("ct", "expected"),
    [
        ("application/vnd.kubernetes.protobuf", True),
        ("application/vnd.kubernetes.protobuf; charset=utf-8", True),
        (" Application/VND.Kubernetes.Protobuf ", True),
        ("application/vnd.kubernetes.protobuf;stream=watch", True),
        ("application/json", False),
        ("application/vnd.kubernetes.protobuf+json", False),
        ("", False),
    ],
)
def test_is_k8s_protobuf(ct: str, expected: bool) -> None:
    assert is_k8s_protobuf(ct) is expected


# ------------------------------------------------------------ Go JSON semantics


def test_empty_raw_gives_the_go_zero_object() -> None:
    assert decode_k8s_protobuf(_envelope("apps/v1", "Deployment", None)) == {
        "kind": "Deployment",
        "apiVersion": "apps/v1",
        "metadata": {},
        "spec": {
            "selector": None,
            "template": {"metadata": {}, "spec": {"containers": None}},
            "strategy": {},
        },
        "status": {},
    }


def test_pointer_zero_kept_and_omitempty_zero_dropped() -> None:
    obj = {
        "kind": "Deployment",
        "apiVersion": "apps/v1",
        "metadata": {"name": "d", "generation": 0},
        "spec": {
            "replicas": 0,
            "minReadySeconds": 0,
            "paused": False,
            "selector": {"matchLabels": {}},
            "template": {"spec": {"containers": [], "initContainers": []}},
        },
        "status": {"replicas": 0, "observedGeneration": 0},
    }
    assert decode_k8s_protobuf(encode_k8s_protobuf(obj)) == {
        "kind": "Deployment",
        "apiVersion": "apps/v1",
        "metadata": {"name": "d"},
        "spec": {
            "replicas": 0,
            "selector": {},
            "template": {"metadata": {}, "spec": {"containers": None}},
            "strategy": {},
        },
        "status": {},
    }


def test_times() -> None:
    obj = {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": "p",
            "creationTimestamp": "2024-02-29T23:59:59Z",
            "deletionTimestamp": "1970-01-01T00:00:00Z",
        },
        "status": {
            "startTime": "0999-12-31T01:02:03+01:00",
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    got = decode_k8s_protobuf(encode_k8s_protobuf(obj))
    assert got["metadata"] == {
        "name": "p",
        "creationTimestamp": "2024-02-29T23:59:59Z",
        "deletionTimestamp": "1970-01-01T00:00:00Z",
    }
    assert got["status"]["startTime"] == "0999-12-31T00:02:03Z"
    # non-pointer metav1.Time without omitzero: zero is JSON null
    assert got["status"]["conditions"] == [
        {"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": None}
    ]


def test_time_drops_nanoseconds_micro_time_keeps_microseconds() -> None:
    ts = _field(1, 0, _varint(1_700_000_000)) + _field(2, 0, _varint(123_456_789))
    meta = _field(1, 2, b"e") + _field(8, 2, ts)
    raw = _field(1, 2, meta) + _field(10, 2, ts)  # Event.metadata, Event.eventTime
    ev = decode_k8s_protobuf(_envelope("v1", "Event", raw))
    assert ev["metadata"]["creationTimestamp"] == "2023-11-14T22:13:20Z"
    assert ev["eventTime"] == "2023-11-14T22:13:20.123456Z"
    assert ev["firstTimestamp"] is None
    # an explicitly zero time.Time (Unix -62135596800) is null / omitted like a missing one
    zero = _field(1, 0, _varint(-62135596800)) + _field(2, 0, _varint(0))
    raw = _field(1, 2, _field(8, 2, zero)) + _field(6, 2, zero)
    ev = decode_k8s_protobuf(_envelope("v1", "Event", raw))
    assert "creationTimestamp" not in ev["metadata"]
    assert ev["firstTimestamp"] is None


@pytest.mark.parametrize(
    ("seconds", "micros", "text"),
    [
        (0, None, "1970-01-01T00:00:00Z"),
        (-1, None, "1969-12-31T23:59:59Z"),
        (951782400, None, "2000-02-29T00:00:00Z"),
        (253402300799, 999999, "9999-12-31T23:59:59.999999Z"),
        (-62135596800, None, "0001-01-01T00:00:00Z"),
        (-62167219200 - 86400 * 365, None, "-0001-01-01T00:00:00Z"),
    ],
)
def test_format_unix(seconds: int, micros: int | None, text: str) -> None:
    assert format_unix(seconds, micros) == text


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "0s"),
        (1, "1ns"),
        (1_500, "1.5µs"),
        (2_000_000, "2ms"),
        (1_500_000_000, "1.5s"),
        (90_000_000_000, "1m30s"),
        (3_600_000_000_000, "1h0m0s"),
        (-5_400_000_000_001, "-1h30m0.000000001s"),
    ],
)
def test_go_duration_format_and_parse(ns: int, text: str) -> None:
    assert format_go_duration(ns) == text
    assert parse_go_duration(text) == ns


def test_int_or_string_and_quantity_zero_values() -> None:
    obj = {
        "kind": "Service",
        "apiVersion": "v1",
        "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80}, {"port": 81, "targetPort": "http"}]},
    }
    got = decode_k8s_protobuf(encode_k8s_protobuf(obj))
    assert got["spec"]["ports"] == [
        {"port": 80, "targetPort": 0},
        {"port": 81, "targetPort": "http"},
    ]
    with pytest.raises(ProtobufDecodeError, match="IntOrString"):
        ios = _field(1, 0, _varint(7))
        port = _field(3, 0, _varint(80)) + _field(4, 2, ios)
        decode_k8s_protobuf(_envelope("v1", "Service", _field(2, 2, _field(1, 2, port))))


def test_negative_integers_use_ten_byte_varints() -> None:
    obj = {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": "p", "deletionGracePeriodSeconds": -(2**63)},
        "spec": {
            "containers": [{"name": "c"}],
            "priority": -(2**31),
            "securityContext": {"supplementalGroups": [-1, 2**63 - 1]},
        },
    }
    body = encode_k8s_protobuf(obj)
    assert b"\x80\x80\x80\x80\xf8\xff\xff\xff\xff\x01" in body  # int32 min, sign-extended
    got = decode_k8s_protobuf(body)
    assert got["metadata"]["deletionGracePeriodSeconds"] == -(2**63)
    assert got["spec"]["priority"] == -(2**31)
    assert got["spec"]["securityContext"] == {"supplementalGroups": [-1, 2**63 - 1]}


def test_packed_repeated_varints_are_accepted() -> None:
    # PodSecurityContext.supplementalGroups (4) packed, as a proto3 encoder would send it
    packed = _field(4, 2, _varint(1) + _varint(2) + _varint(300))
    spec = _field(14, 2, packed)
    pod = decode_k8s_protobuf(_envelope("v1", "Pod", _field(2, 2, spec)))
    assert pod["spec"]["securityContext"] == {"supplementalGroups": [1, 2, 300]}


def test_raw_extension_json_and_nested_protobuf() -> None:
    inner = encode_k8s_protobuf({"kind": "ConfigMap", "apiVersion": "v1", "data": {"a": "b"}})
    raw = _field(1, 2, _field(1, 2, b"r")) + _field(2, 2, _field(1, 2, inner))
    cr = decode_k8s_protobuf(_envelope("apps/v1", "ControllerRevision", raw))
    assert cr["data"] == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {},
        "data": {"a": "b"},
    }
    assert cr["revision"] == 0
    bad = _field(2, 2, _field(1, 2, b"{not json"))
    with pytest.raises(ProtobufDecodeError, match="neither JSON nor protobuf"):
        decode_k8s_protobuf(_envelope("apps/v1", "ControllerRevision", bad))


def test_managed_fields_v1_is_embedded_json() -> None:
    obj = {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {
            "name": "c",
            "managedFields": [
                {
                    "manager": "kubectl",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "2024-01-01T00:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {".": {}, "f:a": {}}},
                }
            ],
        },
    }
    assert decode_k8s_protobuf(encode_k8s_protobuf(obj)) == obj


@pytest.mark.parametrize("api_version", ["v1", "meta.k8s.io/v1", "apps/v1", "batch/v1"])
def test_delete_options_under_any_group_version(api_version: str) -> None:
    obj = {
        "kind": "DeleteOptions",
        "apiVersion": api_version,
        "gracePeriodSeconds": 0,
        "preconditions": {"uid": "u-1", "resourceVersion": "42"},
        "propagationPolicy": "Foreground",
        "dryRun": ["All"],
    }
    assert decode_k8s_protobuf(encode_k8s_protobuf(obj)) == obj


def test_eviction_and_scale() -> None:
    ev = {
        "kind": "Eviction",
        "apiVersion": "policy/v1",
        "metadata": {"name": "p", "namespace": "ns"},
        "deleteOptions": {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 3},
    }
    got = decode_k8s_protobuf(encode_k8s_protobuf(ev))
    assert got["deleteOptions"] == {"gracePeriodSeconds": 3}
    scale = {"kind": "Scale", "apiVersion": "autoscaling/v1", "spec": {"replicas": 5}}
    assert decode_k8s_protobuf(encode_k8s_protobuf(scale)) == {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {},
        "spec": {"replicas": 5},
        "status": {"replicas": 0},
    }


def test_lease_micro_times() -> None:
    lease = {
        "kind": "Lease",
        "apiVersion": "coordination.k8s.io/v1",
        "metadata": {"name": "kube-controller-manager", "namespace": "kube-system"},
        "spec": {
            "holderIdentity": "me_1",
            "leaseDurationSeconds": 15,
            "acquireTime": "2024-05-01T10:00:00.000000Z",
            "renewTime": "2024-05-01T10:00:05.123456Z",
            "leaseTransitions": 0,
        },
    }
    assert decode_k8s_protobuf(encode_k8s_protobuf(lease)) == lease


def test_inline_structs_merge_into_the_parent_object() -> None:
    obj = {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": "p"},
        "spec": {
            "volumes": [{"name": "v", "configMap": {"name": "cm", "optional": False}}],
            "containers": [
                {
                    "name": "c",
                    "readinessProbe": {"httpGet": {"port": "http"}, "periodSeconds": 3},
                    "env": [
                        {"name": "K", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
                    ],
                }
            ],
            "ephemeralContainers": [{"name": "dbg", "targetContainerName": "c"}],
        },
    }
    got = decode_k8s_protobuf(encode_k8s_protobuf(obj))
    spec = got["spec"]
    assert spec["volumes"] == [{"name": "v", "configMap": {"name": "cm", "optional": False}}]
    assert spec["containers"][0]["readinessProbe"] == {
        "httpGet": {"port": "http"},
        "periodSeconds": 3,
    }
    assert spec["containers"][0]["env"] == [
        {"name": "K", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
    ]
    assert spec["ephemeralContainers"] == [
        {"name": "dbg", "resources": {}, "targetContainerName": "c"}
    ]


def test_unknown_fields_of_every_wire_type_are_skipped() -> None:
    body = _body("namespace")
    ns = decode_k8s_protobuf(body)
    raw = _field(1, 2, _field(1, 2, b"foo"))
    extras = (
        _field(99, 0, _varint(12345))
        + _field(100, 1, b"\x00" * 8)
        + _field(101, 2, b"whatever")
        + _field(102, 5, b"\x00" * 4)
        + _varint(103 << 3 | 3)
        + _field(1, 0, _varint(1))
        + _varint(103 << 3 | 4)
    )
    got = decode_k8s_protobuf(_envelope("v1", "Namespace", extras + raw + extras))
    assert got == ns
    # unknown fields in the envelope itself
    env = _envelope("v1", "Namespace", raw) + _field(9, 0, _varint(1))
    assert decode_k8s_protobuf(env)["metadata"] == {"name": "foo"}


def test_repeated_message_fields_merge_like_go() -> None:
    # metadata sent twice: proto merges the two messages, last scalar wins
    raw = _field(1, 2, _field(1, 2, b"a") + _field(3, 2, b"ns")) + _field(1, 2, _field(1, 2, b"b"))
    got = decode_k8s_protobuf(_envelope("v1", "ConfigMap", raw))
    assert got["metadata"] == {"name": "b", "namespace": "ns"}
    # an omitempty scalar set then cleared is dropped
    raw = _field(1, 2, _field(1, 2, b"a") + _field(1, 2, b""))
    assert decode_k8s_protobuf(_envelope("v1", "ConfigMap", raw))["metadata"] == {}


# ------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"", "missing the 4-byte prefix"),
        (b"{}", "missing the 4-byte prefix"),
        (b"k8s\x01\n\x00", "missing the 4-byte prefix"),
        (K8S_PROTOBUF_MAGIC + b"\x0a", "truncated varint"),
        (K8S_PROTOBUF_MAGIC + b"\x0a\x05\x0a", "truncated length-delimited"),
        (K8S_PROTOBUF_MAGIC + b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", "longer than"),
        (K8S_PROTOBUF_MAGIC + b"\x08\x01", "wire type 0, expected length-delimited"),
        (K8S_PROTOBUF_MAGIC + b"\x2f", "invalid protobuf wire type 7"),
        (K8S_PROTOBUF_MAGIC + b"\x00\x00", "field number 0"),
        (K8S_PROTOBUF_MAGIC, r"kind <empty> \(apiVersion <empty>\) is not supported"),
    ],
)
def test_malformed_bodies(body: bytes, match: str) -> None:
    with pytest.raises(ProtobufDecodeError, match=match):
        decode_k8s_protobuf(body)


def test_wire_type_mismatch_names_the_field() -> None:
    raw = _field(1, 2, _field(1, 0, _varint(3)))  # ObjectMeta.name as a varint
    with pytest.raises(ProtobufDecodeError, match=r"meta/v1.ObjectMeta.name: got 0, expected 2"):
        decode_k8s_protobuf(_envelope("v1", "ConfigMap", raw))
    raw = _field(2, 2, _field(1, 2, b"x"))  # DeploymentSpec.replicas as bytes
    with pytest.raises(ProtobufDecodeError, match=r"apps/v1.DeploymentSpec.replicas"):
        decode_k8s_protobuf(_envelope("apps/v1", "Deployment", raw))


def test_content_encoding_is_rejected() -> None:
    tm = _field(1, 2, b"v1") + _field(2, 2, b"ConfigMap")
    body = K8S_PROTOBUF_MAGIC + _field(1, 2, tm) + _field(2, 2, b"") + _field(3, 2, b"gzip")
    with pytest.raises(ProtobufDecodeError, match="contentEncoding"):
        decode_k8s_protobuf(body)


def test_decode_error_is_a_value_error() -> None:
    assert issubclass(ProtobufDecodeError, ValueError)
    assert issubclass(ProtobufUnsupportedKindError, ProtobufDecodeError)
    assert issubclass(ProtobufEncodeError, ValueError)


def test_encoder_rejects_bad_values() -> None:
    with pytest.raises(ProtobufEncodeError, match="not supported"):
        encode_k8s_protobuf({"kind": "Widget", "apiVersion": "example.com/v1"})
    with pytest.raises(ProtobufEncodeError, match="expected an integer"):
        encode_k8s_protobuf(
            {"kind": "Deployment", "apiVersion": "apps/v1", "spec": {"replicas": "3"}}
        )
    with pytest.raises(ProtobufEncodeError, match="RFC 3339"):
        encode_k8s_protobuf(
            {"kind": "Pod", "apiVersion": "v1", "metadata": {"creationTimestamp": "yesterday"}}
        )


# ------------------------------------------------------------ schema table


def test_schema_is_closed_and_covers_the_requested_kinds() -> None:
    schema = load_schema()
    for msg in schema.messages.values():
        for _name, kind, sub, _flags in msg.fields.values():
            assert (sub is not None) == (kind == K_MSG)
    for key in [
        "v1/Pod",
        "v1/Namespace",
        "v1/ConfigMap",
        "v1/Secret",
        "v1/Service",
        "v1/ServiceAccount",
        "v1/Endpoints",
        "v1/Event",
        "v1/Node",
        "v1/PodTemplate",
        "v1/Binding",
        "v1/PersistentVolumeClaim",
        "v1/ReplicationController",
        "apps/v1/Deployment",
        "apps/v1/ReplicaSet",
        "apps/v1/StatefulSet",
        "apps/v1/DaemonSet",
        "apps/v1/ControllerRevision",
        "batch/v1/Job",
        "batch/v1/CronJob",
        "coordination.k8s.io/v1/Lease",
        "autoscaling/v1/Scale",
        "policy/v1/Eviction",
        "policy/v1/PodDisruptionBudget",
        "meta.k8s.io/v1/DeleteOptions",
    ]:
        assert key in schema.kinds, key
    assert "DeleteOptions" in schema.any_version_kinds


# ------------------------------------------------------------ property tests

_TEXT = st.text(alphabet=string.ascii_letters + string.digits + "-./:_ éü€", max_size=8)
_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | _TEXT,
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(_TEXT, kids, max_size=3),
    max_leaves=6,
)


@st.composite
def _times(draw: st.DrawFn, micro: bool) -> str:
    seconds = draw(st.integers(-62135596800 + 1, 253402300799))
    micros = draw(st.integers(0, 999_999)) if micro else None
    return format_unix(seconds, micros)


def _scalar(kind: int) -> st.SearchStrategy[Any]:
    if kind == K_STR:
        return _TEXT
    if kind == K_BOOL:
        return st.booleans()
    if kind == K_I32:
        return st.integers(-(2**31), 2**31 - 1)
    if kind == K_I64:
        return st.integers(-(2**63), 2**63 - 1)
    if kind == K_U32:
        return st.integers(0, 2**32 - 1)
    if kind == K_U64:
        return st.integers(0, 2**64 - 1)
    if kind == K_F64:
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind == K_BYTES:
        return st.binary(max_size=8).map(lambda b: base64.b64encode(b).decode())
    if kind == K_TIME:
        return _times(False)
    if kind == K_MTIME:
        return _times(True)
    if kind == K_DUR:
        return st.integers(-(10**15), 10**15).map(format_go_duration)
    if kind == K_QTY:
        return st.sampled_from(["0", "1", "100m", "1.5", "128Mi", "1Gi", "2k", "1e3"])
    if kind == K_IOS:
        return st.integers(-(2**31), 2**31 - 1) | _TEXT
    if kind in (K_RAW, K_FV1):
        return st.dictionaries(_TEXT, _JSONISH, max_size=3)
    raise AssertionError(kind)


def _fields_of(msg: Message) -> list[tuple[str, int, Message | None, int]]:
    out: list[tuple[str, int, Message | None, int]] = []
    for name, kind, sub, flags in msg.fields.values():
        if flags & F_INLINE:
            assert sub is not None
            out.extend(_fields_of(sub))
        else:
            out.append((name, kind, sub, flags))
    return out


def _value(kind: int, sub: Message | None, depth: int) -> st.SearchStrategy[Any]:
    if kind == K_MSG:
        assert sub is not None
        return _objects(sub, depth + 1)
    return _scalar(kind)


def _objects(msg: Message, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for name, kind, sub, flags in _fields_of(msg):
        if kind == K_MSG and depth >= 3:
            continue
        value = _value(kind, sub, depth)
        if flags & F_REPEATED:
            value = st.lists(value, max_size=2)
        elif flags & F_MAP:
            value = st.dictionaries(_TEXT, value, max_size=2)
        if flags & (F_POINTER | F_REPEATED | F_MAP) and not flags & F_OMITEMPTY:
            value = st.none() | value
        optional[name] = value
    return st.fixed_dictionaries({}, optional=optional)


_ROUND_TRIP_KINDS = [
    "v1/Pod",
    "v1/Service",
    "v1/Secret",
    "v1/ConfigMap",
    "v1/Node",
    "v1/Event",
    "v1/PersistentVolume",
    "apps/v1/Deployment",
    "apps/v1/StatefulSet",
    "apps/v1/ControllerRevision",
    "batch/v1/Job",
    "batch/v1/CronJob",
    "coordination.k8s.io/v1/Lease",
    "policy/v1/PodDisruptionBudget",
    "meta.k8s.io/v1/DeleteOptions",
]


@st.composite
def _typed_objects(draw: st.DrawFn) -> dict[str, Any]:
    key = draw(st.sampled_from(_ROUND_TRIP_KINDS))
    api_version, _, kind = key.rpartition("/")
    obj = draw(_objects(load_schema().kinds[key]))
    return {"kind": kind, "apiVersion": api_version, **obj}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_typed_objects())
def test_round_trip_reaches_a_fixed_point(obj: dict[str, Any]) -> None:
    body = encode_k8s_protobuf(obj)
    decoded = decode_k8s_protobuf(body)
    # the decoded form is Go's JSON of the object: encoding it again gives the same
    # bytes, and decoding those gives the same JSON
    assert encode_k8s_protobuf(decoded) == body
    assert decode_k8s_protobuf(encode_k8s_protobuf(decoded)) == decoded
    assert decoded["kind"] == obj["kind"] and decoded["apiVersion"] == obj["apiVersion"]
    # every non-empty string / number / bool set at the top level of metadata survives
    for k, v in obj.get("metadata", {}).items():
        if isinstance(v, (str, int)) and v not in ("", 0) and k != "creationTimestamp":
            assert decoded["metadata"][k] == v


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_after_the_magic_never_crash(data: bytes) -> None:
    try:
        out = decode_k8s_protobuf(K8S_PROTOBUF_MAGIC + data)
    except ProtobufDecodeError:
        return
    assert isinstance(out, dict)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(_ROUND_TRIP_KINDS), st.binary(max_size=300))
def test_random_object_bytes_for_a_known_kind_never_crash(key: str, raw: bytes) -> None:
    api_version, _, kind = key.rpartition("/")
    try:
        out = decode_k8s_protobuf(_envelope(api_version, kind, raw))
    except ProtobufDecodeError:
        return
    assert out["kind"] == kind


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(DECODABLE),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4),
    st.integers(0, 10_000),
)
def test_mutated_kubectl_bodies_never_crash(
    name: str, flips: list[tuple[int, int]], cut: int
) -> None:
    body = bytearray(_body(name))
    for at, byte in flips:
        body[at % len(body)] = byte
    body = body[: max(len(K8S_PROTOBUF_MAGIC), len(body) - cut % len(body))]
    try:
        out = decode_k8s_protobuf(bytes(body))
    except ProtobufDecodeError:
        return
    assert isinstance(out, dict)
