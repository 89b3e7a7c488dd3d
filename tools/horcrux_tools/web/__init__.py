"""The browser client's serving (docs/WEB.md): the page's files, kept in the repository's
top-level `web/` folder, served at `/` by `horcrux serve` and deployed to S3 + CloudFront by
the CDK stack; and the players' words the page and the terminal client share."""

from horcrux_tools.web.static import site_files, static_response, write_site

__all__ = ["site_files", "static_response", "write_site"]
