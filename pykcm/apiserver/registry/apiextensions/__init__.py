"""Strategy of apiextensions.k8s.io/v1 CustomResourceDefinitions."""
