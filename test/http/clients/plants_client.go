// A client of the Plant Store API as an integrator writes it: the package oapi-codegen generated from the served
// /openapi.json (`plants`, beside this file), through its typed *WithResponse calls. Go's int64 is exact over the
// whole id range: ids beyond 2^53 need no recipe here.
// Usage: plants_client <base URL> <token>. Prints one JSON line of what it saw.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"

	"plantsclient/plants"
)

func bearer(token string) plants.ClientOption {
	return plants.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+token)
		return nil
	})
}

func must[T any](value T, err error) T {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return value
}

type page struct {
	Names []string `json:"names"`
	Pages int      `json:"pages"`
}

var next = regexp.MustCompile(`<([^>]*)>;\s*rel="next"`)

func main() {
	base, token := os.Args[1], os.Args[2]
	ctx := context.Background()
	client := must(plants.NewClientWithResponses(base, bearer(token)))
	stranger := must(plants.NewClientWithResponses(base, bearer("not-a-token-of-this-service")))

	indoor := plants.PlantTag("indoor")
	created := []int{}
	for _, body := range []plants.NewPlant{
		{Id: 1, Name: "Monstera", Tag: &indoor},
		{Id: 1 << 53, Name: "2^53"},
		{Id: 1<<53 + 1, Name: "2^53 + 1"},
		{Id: -1 << 63, Name: "int64 min"},
	} {
		created = append(created, must(client.CreatePlantWithResponse(ctx, body)).StatusCode())
	}
	// The typed failures: a conflicting create (409) and an unknown token (401).
	conflict := must(client.CreatePlantWithResponse(ctx, plants.NewPlant{Id: 1, Name: "Fern"})).JSON409
	unauthorized := must(stranger.ListPlantsWithResponse(ctx, nil)).JSON401

	// Every plant, one page of `limit` at a time, following the Link header the client parsed.
	listAll := func(limit int32) page {
		seen := page{Names: []string{}}
		params := plants.ListPlantsParams{Limit: &limit}
		for {
			res := must(client.ListPlantsWithResponse(ctx, &params))
			if res.JSON200 == nil || res.Headers200 == nil {
				fmt.Fprintf(os.Stderr, "GET /plants answered %d\n", res.StatusCode())
				os.Exit(1)
			}
			seen.Pages++
			for _, plant := range *res.JSON200 {
				seen.Names = append(seen.Names, plant.Name)
			}
			if res.Headers200.Link == nil {
				return seen
			}
			found := next.FindStringSubmatch(*res.Headers200.Link)
			if found == nil {
				return seen
			}
			cursor := must(url.Parse(found[1])).Query().Get("cursor")
			params.Cursor = &cursor
		}
	}

	before := listAll(2)
	id := fmt.Sprint(int64(1<<53 + 1))
	deleted := must(client.DeletePlantWithResponse(ctx, id)).StatusCode()
	deletedAgain := must(client.DeletePlantWithResponse(ctx, id)).StatusCode()
	after := listAll(100)

	out := must(json.Marshal(map[string]any{
		"created": created, "conflict": conflict, "unauthorized": unauthorized,
		"before": before, "deleted": deleted, "deletedAgain": deletedAgain, "after": after,
	}))
	fmt.Println(string(out))
}
