# Static controller binary on a distroless, non-root base.
#   docker build -t ghcr.io/porch-variants/variant-controller:dev .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY pkg/ pkg/
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w" -o /out/variant-controller ./cmd/variant-controller

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/variant-controller /variant-controller
USER 65532:65532
ENTRYPOINT ["/variant-controller"]
