"""Request bodies decoded as kube-apiserver's serializers decode them: Go's typed JSON
decoding and its error messages, YAML bodies (upstream's ``apimachinery/pkg/runtime/serializer``).
"""
