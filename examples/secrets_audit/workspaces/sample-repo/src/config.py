"""Service configuration."""
import os

AWS_ACCESS_KEY_ID = "AKIAQ3EXAMPLEK7Z2M4Q"
AWS_REGION = os.environ.get("AWS_REGION", "eu-west-1")
DATABASE_URL = os.environ["DATABASE_URL"]
