"""A client of the Plant Store API as an integrator writes it: the package openapi-generator (`-g python`) generated
from the served /openapi.json (`plants_api`, beside this file). Usage: python plants_openapi_generator.py <base URL>
<token>. Prints one JSON line of what it saw. Python's int is exact at any size: ids beyond 2^53 need no recipe here.
"""

import json
import re
import sys
from urllib.parse import parse_qs, urlparse

from plants_api import ApiClient, Configuration, NewPlant, PlantsApi
from plants_api.exceptions import ApiException

base_url, token = sys.argv[1], sys.argv[2]
plants = PlantsApi(ApiClient(Configuration(host=base_url, access_token=token)))
stranger = PlantsApi(ApiClient(Configuration(host=base_url, access_token="not-a-token-of-this-service")))

created = [
    plants.create_plant_with_http_info(body).status_code
    for body in [
        NewPlant(id=1, name="Monstera", tag="indoor"),
        NewPlant(id=2**53, name="2^53"),
        NewPlant(id=2**53 + 1, name="2^53 + 1"),
        NewPlant(id=-(2**63), name="int64 min"),
    ]
]


def typed_error(call):
    """The Error body of a failure, as the exception's typed `data` (an Error model)."""
    try:
        call()
    except ApiException as e:
        return e.data.to_dict()
    raise RuntimeError("the call did not fail")


conflict = typed_error(lambda: plants.create_plant(NewPlant(id=1, name="Fern")))
unauthorized = typed_error(lambda: stranger.list_plants())


def list_all(limit):
    """Every plant, one page of `limit` at a time, following the Link header the client hands back."""
    names, pages, cursor = [], 0, None
    while True:
        response = plants.list_plants_with_http_info(limit=limit, cursor=cursor)
        pages += 1
        names += [plant.name for plant in response.data]
        found = re.search(r'<([^>]*)>;\s*rel="next"', response.headers.get("Link", ""))
        if found is None:
            return {"names": names, "pages": pages}
        cursor = parse_qs(urlparse(found.group(1)).query)["cursor"][0]


def delete(plant_id):
    try:
        return plants.delete_plant_with_http_info(plant_id).status_code
    except ApiException as e:
        return e.status


before = list_all(2)
plant_id = str(2**53 + 1)
deleted = delete(plant_id)
deleted_again = delete(plant_id)
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
