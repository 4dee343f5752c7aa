"""The HTTP endpoints: from an aiohttp request to the registry and back (upstream's
``apiserver/pkg/endpoints`` and ``server``): the server assembly, handlers, request info,
discovery, OpenAPI, tables, metrics, flow control and the pod proxy.
"""
