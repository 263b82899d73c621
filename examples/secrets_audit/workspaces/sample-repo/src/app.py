"""HTTP entry point."""
from src import config


def handler(event):
    return {"region": config.AWS_REGION, "ok": True}
