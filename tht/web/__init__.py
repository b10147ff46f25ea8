"""The reviewer web UI (``tht serve``): pages, the JSON API and live updates (docs/web.md)."""
