"""A client of the Plant Store API as an integrator writes it: the package openapi-python-client generated from the
served /openapi.json (`plants_api`, beside this file). Usage: python plants_client.py <base URL> <token>. Prints one
JSON line of what it saw. Python's int is exact at any size: ids beyond 2^53 need no recipe here."""

import json
import re
import sys
from urllib.parse import parse_qs, urlparse

from plants_api import AuthenticatedClient
from plants_api.api.plants import create_plant, delete_plant, list_plants
from plants_api.models import NewPlant
from plants_api.types import UNSET

base_url, token = sys.argv[1], sys.argv[2]
client = AuthenticatedClient(base_url=base_url, token=token)

created = [
    create_plant.sync_detailed(client=client, body=body).status_code.value
    for body in [
        NewPlant(id=1, name="Monstera", tag="indoor"),
        NewPlant(id=2**53, name="2^53"),
        NewPlant(id=2**53 + 1, name="2^53 + 1"),
        NewPlant(id=-(2**63), name="int64 min"),
    ]
]


# The typed failures: a conflicting create (409) and an unknown token (401), each parsed as the Error model.
conflict = create_plant.sync_detailed(client=client, body=NewPlant(id=1, name="Fern")).parsed.to_dict()
stranger = AuthenticatedClient(base_url=base_url, token="not-a-token-of-this-service")
unauthorized = list_plants.sync_detailed(client=stranger).parsed.to_dict()


def list_all(limit):
    """Every plant, one page of `limit` at a time, following the Link header's next page."""
    names, pages, cursor = [], 0, UNSET
    while True:
        response = list_plants.sync_detailed(client=client, limit=limit, cursor=cursor)
        if response.status_code != 200:
            raise RuntimeError(f"GET /plants answered {response.status_code}")
        pages += 1
        names += [plant.name for plant in response.parsed]
        found = re.search(r'<([^>]*)>;\s*rel="next"', response.headers.get("Link", ""))
        if found is None:
            return {"names": names, "pages": pages}
        cursor = parse_qs(urlparse(found.group(1)).query)["cursor"][0]


before = list_all(2)
plant_id = str(2**53 + 1)
deleted = delete_plant.sync_detailed(plant_id, client=client).status_code.value
deleted_again = delete_plant.sync_detailed(plant_id, client=client).status_code.value
after = list_all(100)

print(json.dumps({
    "created": created,
    "conflict": conflict,
    "unauthorized": unauthorized,
    "before": before,
    "deleted": deleted,
    "deletedAgain": deleted_again,
    "after": after,
}))
