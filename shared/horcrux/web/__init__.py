"""The browser client (docs/WEB.md): static files served at `/` by `horcrux serve` and
deployed to S3 + CloudFront by the CDK stack."""

from horcrux.web.static import site_files, static_response, write_site

__all__ = ["site_files", "static_response", "write_site"]
